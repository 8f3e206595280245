import Foundation
import HeraldCore
import Testing

@testable import HeraldStore

/// The JSON argument of `herald_batch_v8` as `PostgresBatcher` writes it, read back without a
/// database: every operation's members with their values, absent optionals left out, keys in order.
/// (PostgresRoutinesTests runs such batches through PostgreSQL.)
@Suite("PostgreSQL batch body (the group commit's JSON)")
struct PostgresBatchBodyTests {
    static func objects(_ body: String) throws -> [[String: Any]] {
        try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [[String: Any]])
    }

    /// The keys of each top-level object in the order the text has them.
    static func keyOrders(_ body: String) throws -> [[String]] {
        let keys = try Regex(#"(?:\{|,)"([A-Za-z]+)":"#)
        var orders: [[String]] = []
        for piece in body.dropFirst().dropLast().split(separator: "},{") {
            // Only the object's own members: the limits' nested arrays hold no keys. The split took the
            // brace before each object's first key but the first object's.
            let object = piece.hasPrefix("{") ? String(piece) : "{" + piece
            orders.append(object.matches(of: keys).map { String(object[$0.range].dropFirst(2).dropLast(2)) })
        }
        return orders
    }

    @Test("claims, records and admissions: every member and value, optionals left out, keys in order")
    func members() throws {
        let job = UUID(uuidString: "0190A5B1-7C2E-7F00-8000-000000000001")!
        let now = Date(timeIntervalSince1970: 1_800_000_000.123)
        let pumping = PrefixVelocity.Settings(enabled: true, window: .seconds(10), multiple: 3, minimumSends: 9, blockFor: .seconds(20))
        let session = VerificationSession(
            id: "s1", projectID: "p", phoneNumber: "+15555550100", region: "US", codeHash: Data([0xAB, 0x01]), createdAt: now,
            expiresAt: now.addingTimeInterval(300), maxAttempts: 5, jobID: job)
        let limits = [LimitCheck(kind: .number, scope: "p", subject: "+15555550100", policy: RatePolicy.parse("3/10s burst 2")!)]
        let body = PostgresBatcher.body([
            .claim(
                jobID: job, projectID: "p", type: .sms, destination: "+15555550100", owner: "w\"1",
                description: DeliveryDescription(template: "t", locale: nil, provider: "gw", producer: nil), now: now, reclaimInDoubt: true),
            .record(
                jobID: job, status: .sent, reason: nil, segments: SMSSegments("hello"), providerMessageID: "m-1", event: "e", now: now),
            .record(jobID: job, status: .failed, reason: "no", segments: nil, providerMessageID: nil, event: "", now: now),
            .admit(SendAdmission(session: session, prefix: "+1555555", limits: limits, pumping: pumping, now: now)),
            .admit(SendAdmission(session: session, prefix: "+1555555", limits: [], pumping: nil, now: now)),
        ])
        let objects = try Self.objects(body)
        try #require(objects.count == 5)
        let event = SQLStore.claimEvent(owner: "w\"1", now: now)
        #expect(
            objects[0] as NSDictionary == [
                "eventHead": event.head, "eventTail": event.tail, "jobId": job.lowercasedText, "nowMs": now.millisecondsSince1970, "op": "claim",
                "owner": "w\"1", "project": "p", "provider": "gw", "reclaim": "true", "template": "t", "to": "+15555550100", "type": "sms",
            ] as NSDictionary)
        #expect(
            objects[1] as NSDictionary == [
                "encoding": SMSSegments("hello").encoding.rawValue, "event": "e", "jobId": job.lowercasedText, "nowMs": now.millisecondsSince1970,
                "op": "record", "providerMessageId": "m-1", "segments": 1, "status": "sent",
            ] as NSDictionary)
        #expect(
            objects[2] as NSDictionary == [
                "event": "", "jobId": job.lowercasedText, "nowMs": now.millisecondsSince1970, "op": "record", "reason": "no", "status": "failed",
            ] as NSDictionary)
        let parameters = limits[0].policy.parameters
        #expect(
            objects[3] as NSDictionary == [
                "blockUs": 20_000_000, "codeHash": "ab01", "createdMs": now.millisecondsSince1970,
                "expiresMs": now.addingTimeInterval(300).millisecondsSince1970,
                "id": "s1", "jobId": job.lowercasedText, "limits": [[limits[0].key, parameters.interval, parameters.tolerance]], "maxAttempts": 5,
                "minSends": 9, "multiple": 3.0, "nowUs": now.microsecondsSince1970, "op": "admit", "phone": "+15555550100", "prefix": "+1555555",
                "project": "p", "purpose": "signIn", "region": "US", "smoothing": 0.1, "windowText": "10s", "windowUs": 10_000_000,
            ] as NSDictionary)
        #expect(objects[4]["limits"] as? [Any] != nil && (objects[4]["limits"] as! [Any]).isEmpty)
        #expect(objects[4]["blockUs"] == nil && objects[4]["windowText"] == nil && objects[4]["clientKey"] == nil)
        let orders = try Self.keyOrders(body)
        for order in orders { #expect(order == order.sorted(), "\(order)") }
        #expect(orders.map(\.count) == [12, 8, 6, 20, 14], "\(orders)")
        #expect(PostgresBatcher.body([]) == "[]")
    }
}
