import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A plain TCP connection for tests that misbehave the way HTTP clients must not.
public final class RawConnection {
    public let descriptor: Int32
    public private(set) var received = ""

    public init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw TestFailure("cannot connect to 127.0.0.1:\(port)") }
    }

    private var hungUp = false

    deinit { if hungUp == false { close(descriptor) } }

    /// Closes this side now (the server sees the connection end).
    public func hangUp() {
        guard hungUp == false else { return }
        hungUp = true
        close(descriptor)
    }

    public func send(_ text: String) throws {
        let sent = text.withCString { Glibc.send(descriptor, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        guard sent == text.utf8.count else { throw TestFailure("send failed") }
    }

    /// Set once a read found the connection closed by the peer.
    public private(set) var isClosed = false

    /// True when the peer sent something before `within` passed (false, with `isClosed`, when it hung up).
    public func waitForData(within: Duration) async -> Bool {
        let deadline = ContinuousClock.now + within
        while ContinuousClock.now < deadline {
            switch read() {
            case .data: return true
            case .closed: return false
            case .nothing: try? await Task.sleep(for: .milliseconds(5))
            }
        }
        return false
    }

    /// True when the peer closed the connection (read returned 0 or an error) before `within` passed.
    /// One last look after the deadline: a test process busy elsewhere may wake this loop late, and a
    /// close that came in time must still count.
    public func waitForClose(within: Duration) async -> Bool {
        let deadline = ContinuousClock.now + within
        while ContinuousClock.now < deadline {
            switch read() {
            case .data: continue
            case .closed: return true
            case .nothing: try? await Task.sleep(for: .milliseconds(5))
            }
        }
        while case .data = read() {}
        return isClosed
    }

    /// One look at the socket without waiting. The waits above sleep between looks instead of blocking
    /// in poll(): the API under test runs in this process, on the same few cooperative threads, and a
    /// blocked thread (two, on two cores) starved it so it never answered.
    private func read() -> ReadResult {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 0) > 0 else { return .nothing }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else {
            isClosed = true
            return .closed
        }
        received += String(decoding: buffer[0..<count], as: UTF8.self)
        return .data
    }

    private enum ReadResult { case data, closed, nothing }
}
