import Foundation
import HeraldCore
import Synchronization

/// The clock tests move. Stopped (`TestClock(stoppedAt:)`), time moves only when the test advances it,
/// so what a decision sees is exactly what the test set. Running (`TestClock.running()`), it follows
/// the system clock plus what the test has added, for servers whose libraries read the real time too
/// (a token's signature checked by JWTKit, a TLS handshake) while the test skips past an expiry.
public final class TestClock: WallClock {
    private let state: Mutex<(stopped: Date?, offset: TimeInterval)>

    /// Stopped at `start`.
    public init(stoppedAt start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        state = Mutex((start, 0))
    }

    private init(running: Void) {
        state = Mutex((nil, 0))
    }

    /// Following the system clock until advanced.
    public static func running() -> TestClock { TestClock(running: ()) }

    public var now: Date {
        state.withLock { ($0.stopped ?? Date()).addingTimeInterval($0.offset) }
    }

    /// Moves time forward by `seconds`.
    public func advance(_ seconds: TimeInterval) {
        state.withLock { $0.offset += seconds }
    }
}
