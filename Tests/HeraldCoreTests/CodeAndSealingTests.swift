import Crypto
import Foundation
import HeraldCore
import Testing

@Suite("One-time codes and sealing")
struct CodeAndSealingTests {
    let keys = HeraldKeys(master: Data(repeating: 7, count: 32))

    @Test("A UUID's lowercase text is Foundation's uuidString in lower case")
    func uuidText() {
        #expect(UUID(uuid: (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 255)).lowercasedText == "00010203-0405-0607-0809-0a0b0c0d0eff")
        for _ in 0..<200 {
            let id = UUID()
            #expect(id.lowercasedText == id.uuidString.lowercased())
            #expect(UUID(uuidString: id.lowercasedText) == id)
        }
    }

    @Test("Hex four bytes at a time: every byte value at every place in runs of 0-11 bytes, as two digits per byte written one by one")
    func hexEveryByte() {
        func reference(_ bytes: [UInt8]) -> String {
            let digits = Array("0123456789abcdef")
            return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0F)]] })
        }
        var mismatches = 0
        for length in 0..<12 {
            for place in 0..<max(1, length) {
                for value in 0...255 {
                    // The other bytes count up from the value, so neighbours differ in every nibble.
                    let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 == place ? value : value &+ $0 &* 17) }
                    if SHA256Hex.hex(bytes) != reference(bytes) { mismatches += 1 }
                }
            }
        }
        #expect(mismatches == 0)
        let digest = SHA256.hash(data: Data("abc".utf8))
        #expect(SHA256Hex.hex(digest) == reference(Array(digest)))
        let mac = HMAC<SHA256>.authenticationCode(for: Data("abc".utf8), using: SymmetricKey(size: .bits256))
        #expect(SHA256Hex.hex(mac) == reference(Array(mac)))
        #expect(SHA256Hex.hex(Data([0xde, 0xad, 0xbe, 0xef, 0x01])[1...]) == "adbeef01")
    }

    @Test("A UUID read from text: Foundation's UUID for the 8-4-4-4-12 form in any case, nil for anything else")
    func uuidParsing() {
        var texts: [String] = []
        for _ in 0..<200 {
            let text = UUID().uuidString
            // Upper, lower and mixed case; then one byte replaced by a space, '+', '-', 'g' or NUL.
            texts += [
                text, text.lowercased(), String(text.enumerated().map { $0.offset % 3 == 0 ? Character($0.element.lowercased()) : $0.element }),
            ]
            var bytes = Array(text.utf8)
            bytes[Int.random(in: 0..<bytes.count)] = [UInt8(ascii: "g"), UInt8(ascii: " "), UInt8(ascii: "-"), UInt8(ascii: "+"), 0].randomElement()!
            texts.append(String(decoding: bytes, as: UTF8.self))
        }
        let id = "0192f3a4-5b6c-7d8e-9f00-112233445566"
        texts += [
            "", id.uppercased(), String(id.dropLast()), id + "0", " " + id.dropLast(), String(id.dropLast()) + " ", "{\(id.dropFirst().dropLast())}",
            "0192f3a45b6c7d8e9f00112233445566", "0192f3a45-b6c-7d8e-9f00-112233445566", "0192f3a4-5b6c-7d8e-9f00-11223344556é",
            "+192f3a4-5b6c-7d8e-9f00-112233445566", "0x92f3a4-5b6c-7d8e-9f00-112233445566", "0192f3a4-5b6c-7d8e-9f00-1122334455\u{0}6",
        ]
        let hex = Set("0123456789abcdefABCDEF".utf8)
        for text in texts {
            let bytes = Array(text.utf8)
            let canonical =
                bytes.count == 36
                && bytes.indices.allSatisfy { [8, 13, 18, 23].contains($0) ? bytes[$0] == UInt8(ascii: "-") : hex.contains(bytes[$0]) }
            if canonical {
                #expect(UUID(parsing: text) != nil && UUID(parsing: text) == UUID(uuidString: text), "\(text)")
            } else {
                // Foundation on Linux reads each byte with sscanf's %2hhx, which also takes a space, '+' or
                // '-' where a digit belongs ("6 20654F-…"); a job's id is refused for those.
                #expect(UUID(parsing: text) == nil, "\(text)")
            }
        }
        #expect(UUID(parsing: id)?.lowercasedText == id)
        #expect(texts.filter { UUID(parsing: $0) == nil }.count >= 150, "the refusals are exercised too")
    }

    @Test("SHA-256 hex and job signatures match known answers (RFC 4231 case 2 for the HMAC)")
    func knownAnswers() throws {
        #expect(SHA256Hex.digest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256Hex.hex([0x00, 0x0f, 0xa0, 0xff]) == "000fa0ff")
        #expect(SHA256Hex.hex([UInt8]()) == "")
        #expect(SHA256Hex.hex(SHA256.hash(data: Data("abc".utf8))) == SHA256Hex.digest("abc"))
        let key = SymmetricKey(data: Data("Jefe".utf8))
        let body = Data("what do ya want for nothing?".utf8)
        let signature = JobSignature.sign(body, key: key)
        #expect(signature == "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // A keyed state used many times gives the same MAC each time (its copies never write to it).
        // Compared with swift-crypto's one-shot HMAC, which builds its key state afresh each time.
        let signer = KeyedHMAC(key: key)
        for message in [Data("other".utf8), Data(), body, Data(repeating: 0x61, count: 200)] {
            #expect(signer.authenticationCode(for: message) == HMAC<SHA256>.authenticationCode(for: message, using: key))
        }
        #expect(JobSignature.sign(body, signer: signer) == signature)
        #expect(JobSignature.sign(body, signer: signer) == signature)
        let message = Data("s".utf8) + Data([0]) + Data("123456".utf8)
        #expect(
            OneTimeCode.hash("123456", session: "s", hasher: keys.codeHasher)
                == Data(HMAC<SHA256>.authenticationCode(for: message, using: keys.codeHashing)))
        #expect(JobSignature.verify(body, signature: signature, key: key))
        #expect(JobSignature.verify(body, signature: signature.uppercased().replacingOccurrences(of: "SHA256=", with: "sha256="), key: key))
        #expect(JobSignature.verify(body + Data(" ".utf8), signature: signature, key: key) == false)
        #expect(JobSignature.verify(body, signature: "sha256=zz", key: key) == false)
        #expect(JobSignature.verify(body, signature: nil, key: key) == false)
        // Under the keyed state (as workers verify): the same answers, and a MAC one bit off, one digit
        // short or long, or with a non-hex digit is refused.
        #expect(JobSignature.verify(body, signature: signature, signer: signer))
        #expect(JobSignature.verify(body, signature: signature.uppercased().replacingOccurrences(of: "SHA256=", with: "sha256="), signer: signer))
        let digits = Array(signature.dropFirst("sha256=".count))
        var flipped = digits
        flipped[63] = flipped[63] == "3" ? "2" : "3"
        for bad in [String(flipped), String(digits.dropLast()), String(digits) + "0", String(digits.dropLast()) + "g", ""] {
            #expect(JobSignature.verify(body, signature: "sha256=" + bad, signer: signer) == false, "\(bad)")
        }
        #expect(JobSignature.verify(body, signature: signature, signer: KeyedHMAC(key: SymmetricKey(data: Data("Jeff".utf8)))) == false)
        #expect(signer.isValid(Array(HMAC<SHA256>.authenticationCode(for: body, using: key)), for: body))
        #expect(signer.isValid([UInt8](repeating: 0, count: 32), for: body) == false)
    }

    @Test("loopback hosts: localhost, 127/8, ::1 with or without brackets; nothing else")
    func loopbackHosts() {
        for host in ["localhost", "LOCALHOST", "127.0.0.1", "127.9.8.7", "::1", "[::1]"] { #expect(IPAddress.isLoopback(host: host), "\(host)") }
        for host in ["0.0.0.0", "10.0.0.1", "localhost.evil.net", "::", "[::2]", "example.com", ""] {
            #expect(IPAddress.isLoopback(host: host) == false, "\(host)")
        }
    }

    @Test("codes have the requested length, only digits, and leading zeros occur")
    func generation() {
        let codes = (0..<2000).map { _ in OneTimeCode.generate(length: 6) }
        #expect(codes.allSatisfy { OneTimeCode.isWellFormed($0, length: 6) })
        // P(no leading zero in 2000 draws) = 0.9^2000: never in practice.
        #expect(codes.contains { $0.hasPrefix("0") })
        #expect(Set(codes).count > 1900)
        #expect(OneTimeCode.generate(length: 10).count == 10)
    }

    @Test("random values below a bound are uniform (no modulo bias) and random ids use the whole alphabet")
    func uniformRandom() {
        // 62,000 draws below 62: about 1,000 per value, standard deviation about 31; a modulo-biased
        // draw would give the first 8 values about 1,250 each.
        var counts = [Int](repeating: 0, count: 62)
        for value in SecureRandom.values(62_000, below: 62) { counts[value] += 1 }
        #expect(counts.allSatisfy { (850...1150).contains($0) }, "\(counts)")
        #expect(SecureRandom.bytes(1000).count == 1000)
        #expect(Set(SecureRandom.bytes(64)).count > 40)
        let ids = (0..<200).map { _ in SecureRandom.alphanumeric(28) }
        #expect(ids.allSatisfy { $0.count == 28 && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } })
        #expect(Set(ids.joined()).count == 62)
    }

    @Test("pooled random bytes never repeat across draws of every size; version 7 ids carry their millisecond and sort by it")
    func pooledRandomAndUUIDv7() throws {
        // 4,000 draws of 16 bytes cross the 4 KiB pool's refill many times; a reused or zeroed slice would repeat.
        var seen = Set<[UInt8]>()
        for size in [1, 7, 16, 33, 255, 256, 257, 4096] { #expect(SecureRandom.bytes(size).count == size) }
        for _ in 0..<4000 { seen.insert(SecureRandom.bytes(16)) }
        #expect(seen.count == 4000)
        #expect(seen.contains([UInt8](repeating: 0, count: 16)) == false)

        let date = Date(timeIntervalSince1970: 1_800_000_000.123)
        let id = SecureRandom.uuidV7(at: date)
        let text = id.uuidString.lowercased()
        #expect(text.replacingOccurrences(of: "-", with: "").hasPrefix(String(1_800_000_000_123, radix: 16).leftPadded(to: 12)))
        #expect(Array(text)[14] == "7")
        #expect("89ab".contains(Array(text)[19]))
        let later = (1...50).map { SecureRandom.uuidV7(at: date.addingTimeInterval(Double($0) * 0.002)).uuidString.lowercased() }
        #expect(later == later.sorted())
        #expect(Set(later + [text]).count == 51)
    }

    @Test("hashes verify only the same code in the same session under the same key")
    func hashing() {
        let hash = OneTimeCode.hash("012345", session: "s1", hasher: keys.codeHasher)
        #expect(OneTimeCode.matches("012345", session: "s1", storedHash: hash, key: keys.codeHashing))
        #expect(OneTimeCode.matches("012346", session: "s1", storedHash: hash, key: keys.codeHashing) == false)
        #expect(OneTimeCode.matches("012345", session: "s2", storedHash: hash, key: keys.codeHashing) == false)
        let otherKeys = HeraldKeys(master: Data(repeating: 8, count: 32))
        #expect(OneTimeCode.matches("012345", session: "s1", storedHash: hash, key: otherKeys.codeHashing) == false)
        #expect(hash.count == 32)
        #expect(hash != Data("012345".utf8))
    }

    @Test("the derived keys differ from each other and from the master")
    func derivation() {
        let sealing = keys.sealing.withUnsafeBytes { Data($0) }
        let hashing = keys.codeHashing.withUnsafeBytes { Data($0) }
        #expect(sealing != hashing)
        #expect(sealing != Data(repeating: 7, count: 32))
    }

    @Test("constant-time equality")
    func constantTime() {
        #expect(constantTimeEquals(Array("abc".utf8), Array("abc".utf8)))
        #expect(constantTimeEquals(Array("abc".utf8), Array("abd".utf8)) == false)
        #expect(constantTimeEquals(Array("abc".utf8), Array("abcd".utf8)) == false)
    }

    @Test("sealing round-trips and binds the secret to its job")
    func sealing() throws {
        let sealer = Sealer(key: keys.sealing)
        let job = UUID()
        let sealed = sealer.seal("654321", jobID: job, destination: "+15555550100")
        #expect(sealed.contains("654321") == false)
        #expect(try sealer.open(sealed, jobID: job, destination: "+15555550100") == "654321")
        // Re-addressed to another number: it does not open.
        #expect(throws: Sealer.OpenError.invalid) { try sealer.open(sealed, jobID: job, destination: "+15555550199") }
        #expect(throws: Sealer.OpenError.invalid) { try sealer.open(sealed, jobID: UUID(), destination: "+15555550100") }
        #expect(throws: Sealer.OpenError.invalid) {
            try Sealer(key: HeraldKeys(master: Data(count: 32)).sealing).open(sealed, jobID: job, destination: "+15555550100")
        }
        #expect(throws: Sealer.OpenError.invalid) { try sealer.open("not base64!", jobID: job, destination: "+15555550100") }
        var tampered = Data(base64Encoded: sealed)!
        tampered[tampered.count - 1] ^= 1
        #expect(throws: Sealer.OpenError.invalid) { try sealer.open(tampered.base64EncodedString(), jobID: job, destination: "+15555550100") }
        // Fresh nonce each time.
        #expect(sealer.seal("654321", jobID: job, destination: "+15555550100") != sealed)
        // The job's context is the text `job:<id>:to:<destination>`, byte for byte, both ways (values
        // sealed before it was written on the stack still open), an empty destination included.
        for destination in ["+15555550100", "user@example.com", ""] {
            let context = "job:\(job.uuidString.lowercased()):to:\(destination)"
            #expect(try sealer.open(sealer.seal("s3cret", jobID: job, destination: destination), context: context) == "s3cret")
            #expect(try sealer.open(sealer.seal("s3cret", context: context), jobID: job, destination: destination) == "s3cret")
        }
        // Sealed elsewhere with the same key and context: non-ASCII text opens as sealed; bytes that
        // are not UTF-8 do not open as text.
        let context = "job:x:to:y"
        let text = try AES.GCM.seal(Array("é 654321".utf8), using: keys.sealing, authenticating: Array(context.utf8))
        #expect(try sealer.open(text.combined!.base64EncodedString(), context: context) == "é 654321")
        let bytes = try AES.GCM.seal([0xC3, 0x28], using: keys.sealing, authenticating: Array(context.utf8))
        #expect(throws: Sealer.OpenError.invalid) { try sealer.open(bytes.combined!.base64EncodedString(), context: context) }
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String { String(repeating: "0", count: max(0, length - count)) + self }
}
