import CCurl
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Asynchronous HTTP over one libcurl multi handle driven by its own thread.
///
/// One multi handle shares a DNS cache and a connection pool (and HTTP/2 multiplexing) between all its
/// transfers; libcurl handles must stay on one thread, so requests are configured on the caller's
/// side, handed to the loop thread through a locked inbox, and completed through continuations.
public final class CurlClient: Sendable {
    struct Shared {
        var inbox: [Transfer] = []
        var cancelled: [Transfer] = []
        var stopping = false
        var started = false
        /// The loop cleaned up the multi handle (and with it the pooled connections).
        var closed = false
    }

    /// The multi handle, touched only by the loop thread (and its watch's `wake()`, called under
    /// `shared`'s lock while the handle is open).
    let multi: MultiHandle
    let shared = Mutex(Shared())
    let logger: Logger
    let pooledConnections: Int

    /// `maxConnectionsPerHost` caps parallel connections to one host (HTTP/2 multiplexes onto them).
    /// `pooledConnections` is how many idle connections the pool keeps for reuse: give it the transfers
    /// the caller runs at once (a worker's concurrency). Left at 0, libcurl keeps four per transfer in
    /// flight at the moment one ends, so whenever the transfers in flight dip (an SMS worker's jobs all
    /// waiting on one group commit) it closes connections the next wave opens again: 1 in 10 of a
    /// draining worker's sends made a new connection.
    public init(logger: Logger, maxConnectionsPerHost: Int = 0, pooledConnections: Int = 0) {
        CurlGlobal.initialize()
        self.logger = logger
        self.pooledConnections = pooledConnections
        self.multi = MultiHandle()
        herald_curl_multi_setopt_long(multi.handle, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        if maxConnectionsPerHost > 0 {
            herald_curl_multi_setopt_long(multi.handle, CURLMOPT_MAX_HOST_CONNECTIONS, maxConnectionsPerHost)
        }
        if pooledConnections > 0 {
            herald_curl_multi_setopt_long(multi.handle, CURLMOPT_MAXCONNECTS, pooledConnections)
        }
    }

    /// Performs `request`; throws `CurlError` only when no HTTP response arrived.
    public func perform(_ request: CurlHTTPRequest) async throws(CurlError) -> CurlHTTPResponse {
        guard case .http(let response) = try await run(Transfer(.http(request))) else {
            throw CurlError(kind: .other, code: -1, message: "unexpected transfer output")
        }
        return response
    }

    /// Submits one message over SMTP(S); the pool keeps the connection for the next one. Never throws
    /// for what the server or network did: the reply says it (client shut down or cancelled: reply code 0).
    public func send(_ mail: CurlMailRequest) async -> CurlMailReply {
        do {
            guard case .mail(let reply) = try await run(Transfer(.mail(mail))) else {
                return CurlMailReply(curlCode: -1, replyCode: 0, replyLines: [], error: "unexpected transfer output", messageStarted: false)
            }
            return reply
        } catch {
            return CurlMailReply(
                curlCode: error.code, replyCode: 0, replyLines: [], error: error.message, messageStarted: error.kind == .failedAfterSending)
        }
    }

    private func run(_ transfer: Transfer) async throws(CurlError) -> Transfer.Output {
        startIfNeeded()
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Transfer.Output, any Error>) in
                    transfer.continuation = continuation
                    let accepted = shared.withLock { state -> Bool in
                        guard state.stopping == false else { return false }
                        state.inbox.append(transfer)
                        multi.watch.wake()
                        return true
                    }
                    if accepted == false {
                        transfer.finish(.failure(CurlError(kind: .other, code: -1, message: "client is shut down")))
                    }
                }
            } onCancel: {
                // The loop thread removes the handle and fails the transfer (never from this thread).
                shared.withLock { state in
                    state.cancelled.append(transfer)
                    if state.closed == false { multi.watch.wake() }
                }
            }
        } catch let error as CurlError {
            throw error
        } catch {
            throw CurlError(kind: .other, code: -1, message: "\(error)")
        }
    }

    /// Stops the loop and closes the pooled connections; transfers in flight fail.
    public func shutdown() {
        shared.withLock { state in
            state.stopping = true
            if state.closed == false { multi.watch.wake() }
        }
    }

    private func startIfNeeded() {
        let start = shared.withLock { state -> Bool in
            guard state.started == false else { return false }
            state.started = true
            return true
        }
        guard start else { return }
        let thread = Thread { [self] in self.loop() }
        thread.name = "curl"
        thread.start()
    }

    private func loop() {
        var active: [UnsafeMutableRawPointer: Transfer] = [:]
        let handles = EasyHandles(keeping: max(16, pooledConnections))
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while true {
            let (incoming, cancelled, stopping) = shared.withLock { state -> ([Transfer], [Transfer], Bool) in
                defer {
                    state.inbox = []
                    state.cancelled = []
                }
                return (state.inbox, state.cancelled, state.stopping)
            }
            for transfer in incoming {
                let easy = handles.take()
                transfer.attach(easy)
                if let failure = transfer.configure() {
                    handles.give(transfer.detach())
                    transfer.finish(.failure(failure))
                    continue
                }
                curl_multi_add_handle(multi.handle, easy)
                active[easy] = transfer
            }
            for transfer in cancelled {
                // A transfer that already ended has given its handle back.
                guard let easy = transfer.handle, active.removeValue(forKey: easy) != nil else { continue }
                curl_multi_remove_handle(multi.handle, easy)
                let failure = transfer.cancellation()
                handles.give(transfer.detach())
                transfer.finish(.failure(failure))
            }
            if stopping {
                for (easy, transfer) in active {
                    curl_multi_remove_handle(multi.handle, easy)
                    transfer.finish(.failure(CurlError(kind: .other, code: -1, message: "client shut down")))
                }
                handles.close()
                // Close idle pooled connections now rather than whenever the client is released (an
                // HTTP/2 peer waits for them on its graceful shutdown). Wake-ups check `closed` under
                // the same lock, so none reaches a cleaned-up handle.
                shared.withLock { state in
                    state.closed = true
                    multi.cleanup()
                }
                return
            }
            let ready = epoll_wait(multi.watch.epoll, &events, Int32(events.count), multi.watch.waitMilliseconds)
            var running: Int32 = 0
            for event in events.prefix(Int(max(0, ready))) {
                let socket = event.data.fd
                if socket == multi.watch.wakeup {
                    multi.watch.drainWakeups()
                    continue
                }
                let flags =
                    (event.events & EPOLLIN.rawValue != 0 ? CURL_CSELECT_IN : 0) | (event.events & EPOLLOUT.rawValue != 0 ? CURL_CSELECT_OUT : 0)
                    | (event.events & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 ? CURL_CSELECT_ERR : 0)
                curl_multi_socket_action(multi.handle, socket, flags, &running)
            }
            if multi.watch.timerDue() { curl_multi_socket_action(multi.handle, CURL_SOCKET_TIMEOUT, 0, &running) }
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi.handle, &queued) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
                let result = message.pointee.data.result
                curl_multi_remove_handle(multi.handle, easy)
                if let transfer = active.removeValue(forKey: easy) {
                    let outcome = transfer.outcome(result)
                    handles.give(transfer.detach())
                    transfer.finish(outcome)
                }
            }
        }
    }
}

/// Easy handles between transfers, reset and kept for the next (loop thread only). A handle made and
/// cleaned up per transfer cost the allocation of its state and its 16 KiB receive buffer each time;
/// `curl_easy_reset` keeps both and clears every option (about 1.5 % of a draining SMS worker's CPU
/// per job).
final class EasyHandles {
    private var idle: [UnsafeMutableRawPointer] = []
    private let keeping: Int

    init(keeping: Int) {
        self.keeping = keeping
    }

    func take() -> UnsafeMutableRawPointer {
        idle.popLast() ?? curl_easy_init()
    }

    func give(_ easy: UnsafeMutableRawPointer?) {
        guard let easy else { return }
        guard idle.count < keeping else { return curl_easy_cleanup(easy) }
        curl_easy_reset(easy)
        idle.append(easy)
    }

    func close() {
        for easy in idle { curl_easy_cleanup(easy) }
        idle = []
    }

    deinit {
        close()
    }
}

/// Owns the multi handle's lifetime: cleaned up once, by the loop on shutdown or at release.
final class MultiHandle: Sendable {
    nonisolated(unsafe) let handle: UnsafeMutableRawPointer
    /// The sockets and timer the loop waits on; lives as long as the handle, whose callbacks point at it.
    let watch = SocketWatch()
    let cleaned = Atomic<Bool>(false)

    init() {
        handle = curl_multi_init()
        watch.install(on: handle)
    }

    func cleanup() {
        if cleaned.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged {
            curl_multi_cleanup(handle)
            watch.close()
        }
    }

    deinit {
        cleanup()
    }
}

/// `curl_global_init` once per process, before any other thread uses libcurl; and SIGPIPE ignored,
/// because `CURLOPT_NOSIGNAL` (required with threads) stops libcurl from masking it.
enum CurlGlobal {
    private static let once: Void = {
        curl_global_init(Int(CURL_GLOBAL_ALL))
        signal(SIGPIPE, SIG_IGN)
    }()

    static func initialize() { _ = once }
}
