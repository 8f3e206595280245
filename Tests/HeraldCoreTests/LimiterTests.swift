import Foundation
import HeraldCore
import Testing

@Suite("GCRA limiter decisions (pure, injected time)")
struct GCRATests {
    /// Runs events at the given times (seconds) against one key; returns which were allowed.
    func run(_ policy: String, at times: [Double], skew: (Int) -> Double = { _ in 0 }) -> [Bool] {
        let parameters = GCRA.Parameters(RatePolicy.parse(policy)!)
        var tat: Int64?
        return times.enumerated().map { index, time in
            let now = Int64((time + skew(index)) * 1_000_000)
            let decision = GCRA.decide(tat: tat, now: now, parameters: parameters)
            if decision.allowed { tat = decision.tat }
            return decision.allowed
        }
    }

    @Test("N/period allows a burst of N, then one every period/N")
    func burstThenSteady() {
        #expect(run("3/1m", at: [0, 0, 0, 0]) == [true, true, true, false])
        // The fourth fits 20 s later (60 s / 3), not earlier.
        #expect(run("3/1m", at: [0, 0, 0, 19.9, 20]) == [true, true, true, false, true])
        // Steady arrivals at the rate never hit the limit.
        #expect(run("3/1m", at: stride(from: 0.0, to: 600, by: 20).map { $0 }).allSatisfy { $0 })
    }

    @Test("the retry-after of a refusal is exactly when the next event fits")
    func retryAfter() {
        let parameters = GCRA.Parameters(RatePolicy.parse("3/1m")!)
        var tat: Int64?
        for _ in 0..<3 { tat = GCRA.decide(tat: tat, now: 0, parameters: parameters).tat }
        let refused = GCRA.decide(tat: tat, now: 5_000_000, parameters: parameters)
        #expect(refused.allowed == false)
        #expect(refused.retryAfter == 15_000_000)
        #expect(refused.tat == tat)
        #expect(GCRA.decide(tat: tat, now: 5_000_000 + refused.retryAfter, parameters: parameters).allowed)
    }

    @Test("an explicit burst overrides N for bursts but not for the rate")
    func explicitBurst() {
        let allowed = run("1000/1m burst 200", at: Array(repeating: 0, count: 300)).filter { $0 }.count
        #expect(allowed == 200)
        #expect(run("20/1s burst 1", at: [0, 0.01, 0.05, 0.1]) == [true, false, true, true])
    }

    @Test("a long idle period restores exactly the burst, never more")
    func longIdle() {
        var times = Array(repeating: 0.0, count: 3)
        times += Array(repeating: 3600.0, count: 5)
        #expect(run("3/1m", at: times) == [true, true, true, true, true, true, false, false])
    }

    @Test("refunds give the capacity back; remaining counts what could pass now")
    func refund() {
        let parameters = GCRA.Parameters(RatePolicy.parse("2/1m")!)
        let first = GCRA.decide(tat: nil, now: 0, parameters: parameters)
        let second = GCRA.decide(tat: first.tat, now: 0, parameters: parameters)
        #expect(GCRA.remaining(tat: second.tat, now: 0, parameters: parameters) == 0)
        #expect(GCRA.decide(tat: second.tat, now: 0, parameters: parameters).allowed == false)
        let refunded = GCRA.refund(tat: second.tat, now: 0, parameters: parameters)
        #expect(GCRA.remaining(tat: refunded, now: 0, parameters: parameters) == 1)
        #expect(GCRA.decide(tat: refunded, now: 0, parameters: parameters).allowed)
        // A refund never moves the TAT before now.
        #expect(GCRA.refund(tat: 10, now: 5_000_000, parameters: parameters) == 5_000_000)
    }

    @Test("processes whose clocks disagree by a little allow at most a little more")
    func clockSkew() {
        // 40 requests over 10 s from two processes, one 300 ms ahead of the other, against 10/1s burst 10.
        let times = (0..<400).map { Double($0) * 0.025 }
        let allowed = run("10/1s", at: times, skew: { $0.isMultiple(of: 2) ? 0.3 : 0 }).filter { $0 }.count
        // Without skew: burst 10 + 10/s × 10 s = 110; 300 ms of skew is worth at most 3 more.
        #expect(allowed <= 113)
        #expect(allowed >= 100)
        // Time going backwards does not reopen capacity.
        #expect(run("2/1m", at: [10, 10, 9, 8, 0]) == [true, true, false, false, false])
    }
}

@Suite("Client addresses, regions, prefix velocity, limit keys")
struct AdmissionRulesTests {
    @Test("IPv4 and IPv6 parse; IPv6 clients are keyed by /64")
    func addresses() throws {
        #expect(IPAddress("203.0.113.7")?.limitKey == "203.0.113.7")
        #expect(IPAddress("::ffff:203.0.113.7")?.limitKey == "203.0.113.7")
        let v6 = try #require(IPAddress("2001:db8:0:1:aaaa:bbbb:cccc:dddd"))
        #expect(v6.limitKey == "2001:db8:0:1:0:0:0:0/64")
        #expect(IPAddress("2001:db8:0:1::99")?.limitKey == v6.limitKey)
        #expect(IPAddress("2001:db8:0:2::1")?.limitKey != v6.limitKey)
        #expect(IPAddress("::1") != nil)
        for bad in [
            "", "1.2.3", "1.2.3.256", "1.2.3.4.5", "2001:db8::1::2", "12345::", "hello", "1.2.3.-4", "1..2.3", ".1.2.3", "1.2.3.",
            "1111.2.3.4", "+1.2.3.4", "1.2.3.0x1", "\u{0661}.2.3.4", "1.2.3.4 5",
        ] {
            #expect(IPAddress(bad) == nil, "\(bad)")
        }
        #expect(IPAddress(" 01.002.3.4 ")?.description == "1.2.3.4")
        #expect(IPAddress("255.255.255.255")?.description == "255.255.255.255")
        #expect(IPAddress("0.0.0.0")?.description == "0.0.0.0")
        for _ in 0..<2_000 {
            let parts = (0..<4).map { _ in Int.random(in: 0...255) }
            let text = parts.map(String.init).joined(separator: ".")
            #expect(IPAddress(text)?.description == text)
        }
        let network = try #require(IPNetwork("10.0.0.0/8"))
        #expect(network.contains(IPAddress("10.200.1.2")!))
        #expect(network.contains(IPAddress("11.0.0.1")!) == false)
        #expect(IPNetwork("2001:db8::/32")!.contains(IPAddress("2001:db8:ffff::1")!))
        #expect(IPNetwork("10.0.0.0/33") == nil)
    }

    /// The byte-level IPv4 parser against the rule it implements, spelled the slow way: four parts split
    /// on dots, each one to three ASCII digits with a value up to 255.
    @Test("IPv4 parsing agrees with the rule on 20,000 random strings of dotted parts")
    func ipv4AgainstTheRule() {
        func byRule(_ text: Substring) -> [UInt8]? {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 4 else { return nil }
            var out: [UInt8] = []
            for part in parts {
                guard (1...3).contains(part.count), part.allSatisfy({ $0.isASCII && $0.isNumber }), let value = UInt8(part) else { return nil }
                out.append(value)
            }
            return out
        }
        var generator = Xorshift(state: 0x9E37_79B9_7F4A_7C15)
        // Three to five parts of zero to four characters, mostly digits (and 2s and 5s, for the 255 edge).
        let alphabet = Array("012345678925525x ")
        var parsed = 0
        for _ in 0..<20_000 {
            let parts = (0..<Int.random(in: 3...5, using: &generator)).map { _ in
                String((0..<Int.random(in: 0...4, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            }
            let text = Substring(parts.joined(separator: "."))
            // The address's surrounding spaces are trimmed first (a header's value may carry them).
            let expected = byRule(Substring(text.trimmingCharacters(in: .whitespaces)))
            #expect(IPAddress(String(text)).map { Array($0.bytes.suffix(4)) } == expected, "\(text)")
            if expected != nil { parsed += 1 }
        }
        // The walk is only worth something if it hit valid addresses too.
        #expect(parsed > 100)
    }

    @Test("X-Forwarded-For counts only behind a trusted proxy, right-most untrusted hop wins")
    func forwardedFor() {
        let proxies = [IPNetwork("10.0.0.0/8")!, IPNetwork("127.0.0.1")!]
        // A client talking to us directly cannot pick its key.
        #expect(
            ClientAddress.resolve(peer: IPAddress("198.51.100.9"), forwardedFor: "203.0.113.1", trustedProxies: proxies)?.description
                == "198.51.100.9")
        #expect(ClientAddress.resolve(peer: IPAddress("198.51.100.9"), forwardedFor: nil, trustedProxies: [])?.description == "198.51.100.9")
        // Behind our proxy: the address the proxy saw, even if the client forged earlier hops.
        #expect(
            ClientAddress.resolve(peer: IPAddress("10.0.0.5"), forwardedFor: "1.1.1.1, 203.0.113.1", trustedProxies: proxies)?.description
                == "203.0.113.1")
        // Two proxies of ours in a row.
        #expect(
            ClientAddress.resolve(peer: IPAddress("127.0.0.1"), forwardedFor: "203.0.113.1, 10.0.0.7", trustedProxies: proxies)?.description
                == "203.0.113.1")
        // A proxy without the header counts as the client.
        #expect(ClientAddress.resolve(peer: IPAddress("10.0.0.5"), forwardedFor: nil, trustedProxies: proxies)?.description == "10.0.0.5")
    }

    @Test("X-Forwarded-For hops with ports and brackets parse; a hop that does not counts as its own text, never as the proxy")
    func forwardedForForms() {
        let proxies = [IPNetwork("127.0.0.1")!]
        let proxy = IPAddress("127.0.0.1")
        func resolve(_ header: String) -> ClientAddress? { ClientAddress.resolve(peer: proxy, forwardedFor: header, trustedProxies: proxies) }
        #expect(resolve("9.9.9.2:4444") == .address(IPAddress("9.9.9.2")!))
        #expect(resolve("6.6.6.6, 9.9.9.2:4444") == .address(IPAddress("9.9.9.2")!))
        #expect(resolve("[2001:db8:1:1::1]:4444") == .address(IPAddress("2001:db8:1:1::1")!))
        #expect(resolve("[2001:db8:1:1::1]") == .address(IPAddress("2001:db8:1:1::1")!))
        #expect(resolve("[2001:db8:1:1::1]")?.limitKey == "2001:db8:1:1:0:0:0:0/64")
        #expect(resolve("127.0.0.1:80, 127.0.0.1") == .address(IPAddress("127.0.0.1")!), "only proxies: the first hop")
        #expect(resolve("9.9.9.3, ,") == .address(IPAddress("9.9.9.3")!), "empty hops are skipped")
        for garbage in ["unknown", "9.9.9.2:", "9.9.9.2:123456", "[2001:db8::1]x", "2001:db8::1:4444x", "_hidden", "[::1]:80:80"] {
            let client = resolve("9.9.9.9, " + garbage)
            #expect(client == .unparsed(garbage), "\(garbage)")
            #expect(client?.limitKey == "hop:" + garbage)
            #expect(client?.address == nil)
        }
        #expect(resolve("9.9.9.9, " + String(repeating: "x", count: 500))?.limitKey.count == 68, "the text is kept to 64 bytes")
        #expect(resolve("x\u{1b}[2J\n")?.description == "unparsed hop x\\u{1b}[2J\\n", "shown escaped")
    }

    @Test("region policy: allow-list only those, deny-list all but those")
    func regions() {
        let allowUS = ProjectSettings.Regions(allow: ["US", "CA"], deny: [])
        #expect(RegionPolicy.allows("US", allowUS))
        #expect(RegionPolicy.allows("GB", allowUS) == false)
        let denyRU = ProjectSettings.Regions(allow: [], deny: ["RU"])
        #expect(RegionPolicy.allows("RU", denyRU) == false)
        #expect(RegionPolicy.allows("KZ", denyRU))
        #expect(RegionPolicy.allows("ZZ", .init(allow: [], deny: [])))
    }

    @Test("prefix velocity trips far above the baseline, not on gradual growth, and decays when idle")
    func velocity() {
        let settings = PrefixVelocity.Settings(enabled: true, window: .seconds(60), multiple: 5, minimumSends: 10, blockFor: .seconds(3600))
        var state: PrefixVelocity?
        func send(at second: Double) -> Bool {
            let result = PrefixVelocity.observe(state, now: Int64(second * 1_000_000), settings: settings)
            state = result.state
            return result.trips
        }
        // A quiet prefix: 4 sends a minute for an hour never trips; the baseline settles near 4.
        for minute in 0..<60 { for i in 0..<4 { #expect(send(at: Double(minute * 60 + i)) == false) } }
        #expect(abs((state?.baseline ?? 0) - 4) < 0.5)
        // A burst: the threshold is max(10, 5 × ~4) = ~20 in one window.
        var trippedAt: Int?
        for i in 1...40 where trippedAt == nil { if send(at: 3600 + Double(i)) { trippedAt = i } }
        #expect(trippedAt.map { (19...22).contains($0) } == true, "tripped at \(String(describing: trippedAt))")
        // After a day of silence the baseline has decayed; the minimum still applies.
        state = PrefixVelocity(windowStart: 0, count: 0, baseline: 4)
        for i in 0..<10 { #expect(send(at: 86_400 + Double(i)) == false) }
        #expect((state?.baseline ?? 99) < 0.01)
        #expect(send(at: 86_411))
        // Disabled never trips.
        let off = PrefixVelocity.Settings(enabled: false, window: .seconds(60), multiple: 1, minimumSends: 1, blockFor: .seconds(1))
        #expect(PrefixVelocity.observe(nil, now: 0, settings: off).trips == false)
    }

    @Test("a send's limits are keyed per project and checked IP first; refusals map to the SDK's codes")
    func sendChecks() throws {
        let limits = LimitSettings(
            perNumber: [RatePolicy.parse("5/1h")!, RatePolicy.parse("10/1d")!], perIP: [RatePolicy.parse("50/1m")!],
            perProject: [RatePolicy.parse("1000/1m")!], perCountry: [RatePolicy.parse("200/1h")!], perPrefix: [RatePolicy.parse("100/1h")!],
            prefixDigits: 5, checksPerNumber: [RatePolicy.parse("20/1h")!],
            pumping: .init(enabled: false, window: .seconds(60), multiple: 10, minimumSends: 50, blockFor: .seconds(60)))
        let phone = try PhoneNumber(parsing: "+447911123456")
        let checks = LimitCheck.forSend(project: "demo", phone: phone, clientKey: "2001:db8:0:1:0:0:0:0/64", limits: limits)
        #expect(
            checks.map(\.key) == [
                "ip:demo:2001:db8:0:1:0:0:0:0/64|50/1m", "number:demo:+447911123456|5/1h", "number:demo:+447911123456|10/1d",
                "project:demo:demo|1000/1m", "country:demo:GB|200/1h", "prefix:demo:+44791|100/1h",
            ])
        let refusals: [HeraldError.Code] = checks.map(\.kind.refusal)
        #expect(refusals == [.tooManyAttempts, .tooManyAttempts, .tooManyAttempts, .quotaExceeded, .quotaExceeded, .quotaExceeded])
        let parts = try #require(LimitCheck.parse(checks[0].key))
        #expect(parts.kind == "ip" && parts.project == "demo" && parts.subject == "2001:db8:0:1:0:0:0:0/64" && parts.policy == "50/1m")
        #expect(LimitCheck.forCheck(project: "demo", phoneNumber: "+1", limits: limits).map(\.key) == ["checks:demo:+1|20/1h"])
    }
}
