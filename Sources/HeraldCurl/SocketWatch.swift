import CCurl
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What the loop thread waits on: the sockets libcurl asks to watch (`CURLMOPT_SOCKETFUNCTION`) in an
/// epoll set, libcurl's timer (`CURLMOPT_TIMERFUNCTION`), and an eventfd other threads write to hand
/// over work.
///
/// With `curl_multi_poll` every wake-up polled the socket of every transfer in flight and
/// `curl_multi_perform` walked them all: with 128 SMS in flight against a gateway answering in 200 ms,
/// `poll` alone was 16 % of the worker's CPU, growing with the jobs in flight. Here a wake-up costs
/// what the sockets that are ready cost.
///
/// Everything but `wake()` runs on the loop thread (libcurl calls the callbacks from inside
/// `curl_multi_socket_action`, `curl_multi_add_handle`, `curl_multi_remove_handle` and
/// `curl_multi_cleanup`, all made there or after the loop ended).
final class SocketWatch: @unchecked Sendable {
    let epoll: Int32
    let wakeup: Int32
    /// When libcurl wants `CURL_SOCKET_TIMEOUT` (nil: it has no timer set).
    private var deadline: ContinuousClock.Instant?
    /// Sockets this watch added to the epoll set and has not removed: libcurl asks to stop watching a
    /// pooled connection when its transfer ends and to watch it again for the next, so guessing wrong
    /// (modifying a socket the set no longer holds) cost a failing `epoll_ctl` on most transfers.
    private var registered: Set<Int32> = []

    init() {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        wakeup = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        precondition(epoll >= 0 && wakeup >= 0, "epoll_create1 or eventfd failed: errno \(errno)")
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = wakeup
        epoll_ctl(epoll, EPOLL_CTL_ADD, wakeup, &event)
    }

    /// Registers the callbacks on `multi` with this watch as their context (the multi handle's owner
    /// keeps the watch alive as long as the handle).
    func install(on multi: UnsafeMutableRawPointer) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        herald_curl_multi_setopt_socket_callback(multi, socketCallback)
        herald_curl_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, context)
        herald_curl_multi_setopt_timer_callback(multi, timerCallback)
        herald_curl_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, context)
    }

    /// Wakes the loop (any thread).
    func wake() {
        var one: UInt64 = 1
        _ = write(wakeup, &one, 8)
    }

    /// libcurl's request for `socket`: watch it for `what` (`CURL_POLL_IN`, `_OUT`, `_INOUT`) or stop.
    func watch(_ socket: Int32, _ what: Int32) {
        guard what != CURL_POLL_REMOVE else {
            registered.remove(socket)
            epoll_ctl(epoll, EPOLL_CTL_DEL, socket, nil)
            return
        }
        var event = epoll_event()
        event.events = (what & CURL_POLL_IN != 0 ? EPOLLIN.rawValue : 0) | (what & CURL_POLL_OUT != 0 ? EPOLLOUT.rawValue : 0)
        event.data.fd = socket
        // The record can be stale (a socket closed without a removal leaves the epoll set by itself, and
        // its number may come back), so the call that fails falls back to the other one.
        if registered.insert(socket).inserted {
            if epoll_ctl(epoll, EPOLL_CTL_ADD, socket, &event) != 0, errno == EEXIST {
                epoll_ctl(epoll, EPOLL_CTL_MOD, socket, &event)
            }
        } else if epoll_ctl(epoll, EPOLL_CTL_MOD, socket, &event) != 0, errno == ENOENT {
            epoll_ctl(epoll, EPOLL_CTL_ADD, socket, &event)
        }
    }

    /// libcurl's timer: call back in `milliseconds` (-1: never).
    func setTimer(_ milliseconds: Int) {
        deadline = milliseconds < 0 ? nil : ContinuousClock.now + .milliseconds(milliseconds)
    }

    /// How long `epoll_wait` may sleep: until libcurl's timer, at most a second (a missed wake-up costs
    /// a second, never a hang).
    var waitMilliseconds: Int32 {
        guard let deadline else { return 1000 }
        let left = deadline - ContinuousClock.now
        if left <= .zero { return 0 }
        return Int32(min(1000, (left / .milliseconds(1)).rounded(.up)))
    }

    /// True once libcurl's timer is due; it is then cleared (libcurl sets the next one while it acts).
    func timerDue() -> Bool {
        guard let deadline, deadline <= ContinuousClock.now else { return false }
        self.deadline = nil
        return true
    }

    /// Empties the eventfd after a wake-up.
    func drainWakeups() {
        var value: UInt64 = 0
        _ = read(wakeup, &value, 8)
    }

    /// Closes the epoll set and the eventfd (after `curl_multi_cleanup`, which reports its last removals here).
    func close() {
        Glibc.close(epoll)
        Glibc.close(wakeup)
    }
}

private func socketCallback(
    _ easy: UnsafeMutableRawPointer?, _ socket: Int32, _ what: Int32, _ context: UnsafeMutableRawPointer?, _ socketContext: UnsafeMutableRawPointer?
) -> Int32 {
    guard let context else { return -1 }
    Unmanaged<SocketWatch>.fromOpaque(context).takeUnretainedValue().watch(socket, what)
    return 0
}

private func timerCallback(_ multi: UnsafeMutableRawPointer?, _ milliseconds: Int, _ context: UnsafeMutableRawPointer?) -> Int32 {
    guard let context else { return -1 }
    Unmanaged<SocketWatch>.fromOpaque(context).takeUnretainedValue().setTimer(milliseconds)
    return 0
}
