import Foundation

/// One SMS provider's circuit breaker: whether a worker may send through it now, decided from the
/// outcomes of recent calls. A pure state machine with the time passed in, so that the value can be
/// kept in the shared store (every sms worker applies its calls to the same breaker) and every
/// transition is tested without a provider.
///
/// Closed, calls go through and are counted in a sliding window of `window` (two fixed halves, the
/// older one weighed by how much of it is still inside the window: a few numbers to store, no list of
/// calls). It opens when failures exceed `errorRatio` of at least `minimumCalls` in the window, or
/// after `consecutiveFailures` in a row. Open, nothing is sent until `coolDown` has passed; then it is
/// half-open and lets `probes` calls through: it closes when they all succeed and opens again at the
/// first failure. An operator may force it open (drain the provider) or closed until told otherwise.
public struct CircuitBreaker: Sendable, Equatable {
    public struct Settings: Sendable, Equatable {
        /// The share of failed calls in the window that opens the breaker.
        public var errorRatio: Double
        /// Calls the window must hold before the ratio counts.
        public var minimumCalls: Int
        public var window: Duration
        /// Failures in a row that open it whatever the ratio.
        public var consecutiveFailures: Int
        /// How long it stays open before probing.
        public var coolDown: Duration
        /// Calls let through half-open.
        public var probes: Int

        public init(
            errorRatio: Double = 0.5, minimumCalls: Int = 20, window: Duration = .seconds(30), consecutiveFailures: Int = 5,
            coolDown: Duration = .seconds(30), probes: Int = 3
        ) {
            self.errorRatio = errorRatio
            self.minimumCalls = minimumCalls
            self.window = window
            self.consecutiveFailures = consecutiveFailures
            self.coolDown = coolDown
            self.probes = probes
        }
    }

    public enum State: Sendable, Equatable, Codable {
        case closed
        case open(since: Date)
        /// `admitted` probes are under way or done, `succeeded` of them came back well.
        case halfOpen(since: Date, admitted: Int, succeeded: Int)
        /// Set by an operator: stays so until cleared.
        case forcedOpen(since: Date)
        case forcedClosed(since: Date)

        /// `herald_sms_provider_state`: 0 closed, 1 half-open, 2 open.
        public var gauge: Int {
            switch self {
            case .closed, .forcedClosed: 0
            case .halfOpen: 1
            case .open, .forcedOpen: 2
            }
        }
    }

    /// What a worker may do with the provider now.
    public enum Permission: Sendable, Equatable {
        case call
        /// A half-open probe: the call's outcome decides whether the breaker closes.
        case probe
        /// Not before `until` (nil: until an operator closes it).
        case refused(until: Date?)
    }

    /// A change of state, to log once and count.
    public struct Transition: Sendable, Equatable {
        public var from: State
        public var to: State
        public var reason: String
    }

    public let settings: Settings
    public private(set) var state: State = .closed
    /// The current half of the window: where it starts, its calls and failures.
    private(set) var bucketStart: Date
    private(set) var calls = 0
    private(set) var failures = 0
    /// The half before it.
    private(set) var previousCalls = 0
    private(set) var previousFailures = 0
    private(set) var failuresInARow = 0

    public init(settings: Settings = Settings(), now: Date) {
        self.settings = settings
        self.bucketStart = now
    }

    /// What the shared store keeps of a breaker: everything but the settings, which each worker has
    /// from its configuration.
    public struct Snapshot: Sendable, Equatable, Codable {
        public var state: State
        var bucketStart: Date
        var calls: Int
        var failures: Int
        var previousCalls: Int
        var previousFailures: Int
        var failuresInARow: Int
    }

    public var snapshot: Snapshot {
        Snapshot(
            state: state, bucketStart: bucketStart, calls: calls, failures: failures, previousCalls: previousCalls,
            previousFailures: previousFailures, failuresInARow: failuresInARow)
    }

    public init(settings: Settings, snapshot: Snapshot) {
        self.settings = settings
        self.state = snapshot.state
        self.bucketStart = snapshot.bucketStart
        self.calls = snapshot.calls
        self.failures = snapshot.failures
        self.previousCalls = snapshot.previousCalls
        self.previousFailures = snapshot.previousFailures
        self.failuresInARow = snapshot.failuresInARow
    }

    /// What `permission(now:)` would answer, without admitting a probe (to compare providers before
    /// choosing one).
    public func peek(now: Date) -> Permission {
        var copy = self
        return copy.permission(now: now).0
    }

    /// Failures in a row so far (for `herald-admin providers status`).
    public var consecutiveFailures: Int { failuresInARow }

    /// Calls and failures the window holds at `now` (the older half weighed by its share still inside).
    public func windowCounts(now: Date) -> (calls: Double, failures: Double) {
        var copy = self
        copy.roll(to: now)
        let half = settings.window.seconds / 2
        let weight = max(0, 1 - now.timeIntervalSince(copy.bucketStart) / half)
        return (Double(copy.calls) + Double(copy.previousCalls) * weight, Double(copy.failures) + Double(copy.previousFailures) * weight)
    }

    /// Whether a call may go now; a call admitted as a probe is counted as under way.
    public mutating func permission(now: Date) -> (Permission, Transition?) {
        switch state {
        case .closed, .forcedClosed:
            return (.call, nil)
        case .forcedOpen:
            return (.refused(until: nil), nil)
        case .open(let since):
            let until = since.addingTimeInterval(settings.coolDown.seconds)
            guard now >= until else { return (.refused(until: until), nil) }
            let transition = move(
                to: .halfOpen(since: now, admitted: 1, succeeded: 0), "cool-down of \(DurationText.format(settings.coolDown)) over; probing")
            return (.probe, transition)
        case .halfOpen(let since, let admitted, let succeeded):
            // Probes not yet answered hold the rest back; an answered round that did not close it is
            // impossible (a failure reopens it). A probe whose job never reached the provider (it
            // expired, its worker stopped) would hold them back for ever, so after a cool-down without
            // every answer the unanswered ones are given out again.
            guard admitted < settings.probes else {
                if now >= since.addingTimeInterval(settings.coolDown.seconds) {
                    state = .halfOpen(since: now, admitted: succeeded + 1, succeeded: succeeded)
                    return (.probe, nil)
                }
                return (.refused(until: min(now.addingTimeInterval(1), since.addingTimeInterval(settings.coolDown.seconds))), nil)
            }
            state = .halfOpen(since: since, admitted: admitted + 1, succeeded: succeeded)
            return (.probe, nil)
        }
    }

    /// A call's outcome: `failed` is a provider failure (5xx, unreachable, auth or account errors);
    /// an answer about the number (invalid, fraud block) is a success for the provider.
    @discardableResult
    public mutating func record(failed: Bool, now: Date) -> Transition? {
        roll(to: now)
        calls += 1
        if failed {
            failures += 1
            failuresInARow += 1
        } else {
            failuresInARow = 0
        }
        switch state {
        case .forcedOpen, .forcedClosed, .open:
            // Forced states hold; calls finishing after the breaker opened change nothing more.
            return nil
        case .halfOpen(let since, let admitted, let succeeded):
            if failed { return open(now, "a probe failed") }
            guard succeeded + 1 >= settings.probes else {
                state = .halfOpen(since: since, admitted: admitted, succeeded: succeeded + 1)
                return nil
            }
            clearWindow(now)
            return move(to: .closed, "\(settings.probes) probes succeeded")
        case .closed:
            guard failed else { return nil }
            if failuresInARow >= settings.consecutiveFailures {
                return open(now, "\(failuresInARow) failures in a row")
            }
            let (windowCalls, windowFailures) = windowCounts(now: now)
            if windowCalls >= Double(settings.minimumCalls), windowFailures > settings.errorRatio * windowCalls {
                return open(
                    now, "\(Int(windowFailures.rounded())) of \(Int(windowCalls.rounded())) calls failed in \(DurationText.format(settings.window))")
            }
            return nil
        }
    }

    /// An operator drains the provider (`open`), restores it (`close`), or hands it back to the
    /// counts (`clear`: closed, window emptied).
    public enum Override: Sendable, Equatable { case open, close, clear }

    @discardableResult
    public mutating func override(_ override: Override, now: Date) -> Transition? {
        switch override {
        case .open: return move(to: .forcedOpen(since: now), "opened by an operator")
        case .close: return move(to: .forcedClosed(since: now), "closed by an operator")
        case .clear:
            clearWindow(now)
            return move(to: .closed, "handed back to its counts by an operator")
        }
    }

    private mutating func open(_ now: Date, _ reason: String) -> Transition? {
        move(to: .open(since: now), reason)
    }

    private mutating func move(to next: State, _ reason: String) -> Transition? {
        guard next != state else { return nil }
        let transition = Transition(from: state, to: next, reason: reason)
        state = next
        return transition
    }

    private mutating func clearWindow(_ now: Date) {
        (bucketStart, calls, failures, previousCalls, previousFailures, failuresInARow) = (now, 0, 0, 0, 0, 0)
    }

    /// Moves the window's halves on to the one `now` falls in.
    private mutating func roll(to now: Date) {
        let half = settings.window.seconds / 2
        let elapsed = now.timeIntervalSince(bucketStart)
        guard elapsed >= half else { return }
        if elapsed < 2 * half {
            (previousCalls, previousFailures) = (calls, failures)
            bucketStart = bucketStart.addingTimeInterval(half)
        } else {
            (previousCalls, previousFailures) = (0, 0)
            bucketStart = now
        }
        (calls, failures) = (0, 0)
    }
}

extension CircuitBreaker.State {
    /// When it entered this state (nil: closed by its counts).
    public var since: Date? {
        switch self {
        case .closed: nil
        case .open(let since), .halfOpen(let since, _, _), .forcedOpen(let since), .forcedClosed(let since): since
        }
    }

    /// `closed`, `open`, `half-open`, `forced-open`, `forced-closed`.
    public var label: String {
        switch self {
        case .closed: "closed"
        case .open: "open"
        case .halfOpen: "half-open"
        case .forcedOpen: "forced-open"
        case .forcedClosed: "forced-closed"
        }
    }
}
