/// `sms.routes`: which providers, in order, carry SMS to a destination. Keys are calling-code prefixes
/// (`+44`, `+4477`), ISO regions (`GB`) or `default`; the longest matching prefix wins, then the
/// destination's region, then `default`. Pure: the number comes in parsed.
public struct SMSRoutes: Sendable, Equatable {
    /// Prefixes with their chains, longest first, so the first match is the longest.
    let prefixes: [(prefix: String, chain: [String])]
    let regions: [String: [String]]
    let fallback: [String]

    public static func == (lhs: SMSRoutes, rhs: SMSRoutes) -> Bool {
        lhs.prefixes.map(\.prefix) == rhs.prefixes.map(\.prefix) && lhs.prefixes.map(\.chain) == rhs.prefixes.map(\.chain)
            && lhs.regions == rhs.regions && lhs.fallback == rhs.fallback
    }

    /// A key that is neither `+` and digits, nor two capital letters, nor `default`.
    public struct InvalidKey: Error, Equatable {
        public var key: String
        public init(key: String) { self.key = key }
    }

    /// One chain for every destination.
    public init(defaultChain: [String]) {
        (prefixes, regions, fallback) = ([], [:], defaultChain)
    }

    /// `routes` as configuration writes them: key to provider names in order.
    public init(_ routes: [String: [String]]) throws(InvalidKey) {
        var prefixes: [(String, [String])] = []
        var regions: [String: [String]] = [:]
        var fallback: [String] = []
        for (key, chain) in routes {
            if key == "default" {
                fallback = chain
            } else if key.count >= 2, key.first == "+", key.dropFirst().allSatisfy({ $0.isASCII && $0.isNumber }) {
                prefixes.append((key, chain))
            } else if key.count == 2, key.allSatisfy({ $0.isASCII && $0.isUppercase }) {
                regions[key] = chain
            } else {
                throw InvalidKey(key: key)
            }
        }
        self.prefixes = prefixes.sorted { $0.0.count > $1.0.count || ($0.0.count == $1.0.count && $0.0 < $1.0) }
        self.regions = regions
        self.fallback = fallback
    }

    /// The chain for an E.164 `number` in `region` (empty when nothing matches and there is no default).
    /// `region` is only asked for when a region's route could apply (parsing a number costs).
    public func chain(for number: String, region: @autoclosure () -> String) -> [String] {
        if let match = prefixes.first(where: { number.hasPrefix($0.prefix) }) { return match.chain }
        guard regions.isEmpty == false else { return fallback }
        return regions[region()] ?? fallback
    }

    /// Every provider name the routes mention, once, in the order first seen (to check against
    /// `sms.providers`).
    public var providerNames: [String] {
        var seen: Set<String> = []
        return (prefixes.flatMap(\.chain) + regions.keys.sorted().flatMap { regions[$0]! } + fallback).filter { seen.insert($0).inserted }
    }
}
