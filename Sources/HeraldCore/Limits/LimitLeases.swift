/// Slices of busy shared limits held in one process, so that most sends under a key every send
/// shares (a project, a country, a client address behind a carrier's NAT) spend a token held in memory
/// instead of writing the same store row as every other send.
///
/// Why: with several sends a millisecond under one key, each batch of admissions wrote that key's row
/// and held its lock until its commit, and two herald-api processes queued for it batch by batch. A
/// lease takes `count` events of the key in one store decision (the same GCRA statement a send uses,
/// with `count` times the spacing), so every process still spends the one shared allowance and together
/// they never pass more than the limit. What changes is the edge: near the limit a process can be
/// refused while another holds unspent tokens, at most `burst / burstShare` of them and only for a
/// token's `lifetime`, after which they go back to the store.
///
/// A token is good only for `lifetime` after its lease was decided: GCRA charged the event at that
/// instant, and a token spent later moves that event into a later window. So a window can hold more
/// than the policy allows by at most the tokens held unspent at its start: per process a lease and what
/// was left of the one before (a quarter), so a 32nd of the burst and a quarter of that; a token that
/// outlives its lifetime goes back instead.
///
/// Keys start leasing only once this process sends more than `Settings.above` a second under them and
/// the policy's burst is large enough for a slice of it (per-number policies never are); every other
/// send asks the store as before. A send never waits for a lease: while none is held it asks the store
/// itself. Pure: the caller passes the time in and carries out the leases and refunds it is given.
public struct LimitLeases: Sendable {
    /// `limits.leasing`.
    public struct Settings: Sendable, Equatable {
        /// Sends per second under one key in this process from which it leases slices; 0 = never.
        public var above: Int
        /// How long a leased token is good for; a lease covers half of this long's demand.
        public var lifetime: Duration

        public init(above: Int, lifetime: Duration) {
            self.above = above
            self.lifetime = lifetime
        }

        /// Every send asks the store.
        public static let off = Settings(above: 0, lifetime: .seconds(1))
    }

    /// Events to take from the store in one decision.
    public struct Lease: Sendable, Equatable {
        public var key: String
        public var parameters: GCRA.Parameters
        public var count: Int
        /// When it was asked for: the decision's time, from which its tokens' lifetime counts.
        public var at: Int64

        /// The store decision that takes all `count` events at once.
        public var storeParameters: GCRA.Parameters { parameters.forCost(Int64(count)) }
    }

    /// Leased events to give back to the store: they lapsed unspent.
    public struct Refund: Sendable, Equatable {
        public var key: String
        public var parameters: GCRA.Parameters
        public var count: Int

        public init(key: String, parameters: GCRA.Parameters, count: Int) {
            self.key = key
            self.parameters = parameters
            self.count = count
        }

        /// The store refund that gives all `count` events back at once.
        public var storeParameters: GCRA.Parameters { parameters.forCost(Int64(count)) }
    }

    /// A lease takes at most this share of the policy's burst (1/32), so that what one process holds
    /// unspent is little of what the others could pass; a burst under 64 is never leased.
    public static let burstShare: Int64 = 32
    /// Keys tracked at once; further keys ask the store (a flood of client addresses cannot grow this).
    public static let maximumKeys = 4096
    /// After a refused or failed lease, the key's sends ask the store for at least this long (and at
    /// most ten times it, however long the refusal's retry-after: a limit that refills is leased again).
    public static let pause: Int64 = 1_000_000

    /// Tokens of one lease and when they lapse.
    struct Slice: Equatable {
        var tokens: Int
        var lapsesAt: Int64
    }

    struct Pool {
        let parameters: GCRA.Parameters
        let cap: Int
        /// Granted slices in the order they lapse (the older first, spent first); a lapsed slice stays
        /// until the sweep gives its tokens back.
        var slices: [Slice] = []
        /// Demand: sends under the key in the window that started at `windowStart`, and in the one before.
        var windowStart: Int64
        var demand = 0
        var lastDemand = 0
        var leasing = false
        var pausedUntil = Int64.min
    }

    public let settings: Settings
    let lifetime: Int64
    /// Sends per `lifetime` from which a key leases.
    let threshold: Int
    var pools: [String: Pool] = [:]
    var nextSweep = Int64.min

    public init(settings: Settings) {
        self.settings = settings
        lifetime = max(1_000, settings.lifetime.microseconds)
        threshold = max(2, Int((Int64(settings.above) * lifetime) / 1_000_000))
    }

    /// How many events one lease of a policy may take; below 2 the key is never leased.
    static func cap(_ parameters: GCRA.Parameters) -> Int {
        Int(parameters.tolerance / parameters.interval / burstShare)
    }

    /// One send under `key`: true when a leased token covers it (the send must not spend the key in the
    /// store), and the lease to ask for, if this key should top up now.
    public mutating func cover(key: String, parameters: GCRA.Parameters, now: Int64) -> (covered: Bool, lease: Lease?) {
        guard settings.above > 0 else { return (false, nil) }
        let cap = Self.cap(parameters)
        guard cap >= 2 else { return (false, nil) }
        // One hash per send and key (this runs for each busy key of every send): found, the pool is
        // changed in place through its index.
        if let index = pools.index(forKey: key) {
            return pools.values[index].cover(key: key, now: now, lifetime: lifetime, threshold: threshold)
        }
        guard pools.count < Self.maximumKeys else { return (false, nil) }
        var pool = Pool(parameters: parameters, cap: cap, windowStart: now)
        let answer = pool.cover(key: key, now: now, lifetime: lifetime, threshold: threshold)
        pools[key] = pool
        return answer
    }

    /// A covered send did not go out (another limit refused it, or the admission failed): its token is
    /// held again, or given back to the store once the slice it may have come from has lapsed.
    public mutating func giveBack(key: String, now: Int64) -> Refund? {
        guard let pool = pools[key] else { return nil }
        // Into the oldest slice while it has not lapsed: the token came from it or a newer one, so it
        // outlives no lease it came from. Once that slice lapsed, the token may have been one of its own.
        guard let oldest = pool.slices.first, oldest.lapsesAt > now else {
            return Refund(key: key, parameters: pool.parameters, count: 1)
        }
        pools[key]!.slices[0].tokens += 1
        return nil
    }

    /// The store's answer to `lease`: granted tokens are held until they lapse; a refusal (the limit is
    /// spent) or a failure pauses leasing of the key, whose sends then ask the store themselves.
    /// Returns the tokens to give straight back (the key was dropped, or the answer came after they lapsed).
    public mutating func leased(_ lease: Lease, granted: Bool, retryAfter: Int64, now: Int64) -> Refund? {
        let lapsesAt = lease.at + lifetime
        let refund = Refund(key: lease.key, parameters: lease.parameters, count: lease.count)
        guard pools[lease.key] != nil else { return granted ? refund : nil }
        pools[lease.key]!.leasing = false
        guard granted else {
            pools[lease.key]!.pausedUntil = now + min(max(retryAfter, Self.pause), 10 * Self.pause)
            return nil
        }
        guard lapsesAt > now else { return refund }
        pools[lease.key]!.slices.append(Slice(tokens: lease.count, lapsesAt: lapsesAt))
        return nil
    }

    /// Lapsed tokens to give back to the store, and keys gone quiet forgotten; does something at most
    /// once per `lifetime`.
    public mutating func sweep(now: Int64) -> [Refund] {
        guard now >= nextSweep else { return [] }
        nextSweep = now + lifetime
        var refunds: [Refund] = []
        var quiet: [String] = []
        for (key, pool) in pools {
            var pool = pool
            let lapsed = pool.slices.reduce(0) { $1.lapsesAt <= now ? $0 + $1.tokens : $0 }
            pool.slices.removeAll { $0.lapsesAt <= now }
            if lapsed > 0 { refunds.append(Refund(key: key, parameters: pool.parameters, count: lapsed)) }
            if pool.slices.isEmpty, pool.leasing == false, now >= pool.pausedUntil, pool.windowStart + 2 * lifetime <= now {
                quiet.append(key)
            } else {
                pools[key] = pool
            }
        }
        for key in quiet { pools[key] = nil }
        return refunds
    }

    /// Tokens held for `key` that have not lapsed (for tests and the status of a key).
    public func held(key: String, now: Int64) -> Int {
        guard let pool = pools[key] else { return 0 }
        return pool.valid(now: now)
    }

    /// Keys tracked.
    public var keys: Int { pools.count }
}

extension LimitLeases.Pool {
    func valid(now: Int64) -> Int {
        slices.reduce(0) { $1.lapsesAt > now ? $0 + $1.tokens : $0 }
    }

    mutating func cover(key: String, now: Int64, lifetime: Int64, threshold: Int) -> (covered: Bool, lease: LimitLeases.Lease?) {
        if now >= windowStart + lifetime {
            lastDemand = now < windowStart + 2 * lifetime ? demand : 0
            windowStart = now
            demand = 0
        }
        demand += 1
        var covered = false
        if let index = slices.firstIndex(where: { $0.lapsesAt > now && $0.tokens > 0 }) {
            slices[index].tokens -= 1
            covered = true
        }
        let rate = max(demand, lastDemand)
        guard leasing == false, now >= pausedUntil, rate >= threshold else { return (covered, nil) }
        // Half a lifetime's demand: a slice is spent after the older one's last quarter, so one the size
        // of a whole lifetime's demand would lapse with a quarter unspent (measured: a token in four went
        // back to the store at 4,000 sends a second).
        let wanted = min(cap, max(2, rate / 2))
        // Top up once a quarter of a lease is left, so the next lease is back before the last token goes.
        guard valid(now: now) <= wanted / 4 else { return (covered, nil) }
        leasing = true
        return (covered, LimitLeases.Lease(key: key, parameters: parameters, count: wanted, at: now))
    }
}
