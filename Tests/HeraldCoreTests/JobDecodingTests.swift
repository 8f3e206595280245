import Foundation
import Testing

@testable import HeraldCore

/// The job decoder's fast reader (`JSONObjectReader`) against the `JSONDecoder` path it stands in for:
/// every body decodes to the same job, or is refused with the same reason.
@Suite("Job bodies: the fast reader decides as JSONDecoder does")
struct JobDecodingTests {
    static let id = "0192f3a4-5b6c-7d8e-9f00-112233445566"
    static let head = #""id":"\#(id)","project":"p","createdAt":"2026-11-25T01:00:00.000Z","expiresAt":"2026-11-25T01:05:00.000Z""#

    static let bodies: [String] = [
        // Each type as herald-api and a foreign producer would write it.
        #"{\#(head),"type":"sms","to":"+15555550100","template":"verification","params":{"codeSealed":"x","app":"A"}}"#,
        #"{\#(head),"type":"sms","to":"+15555550100","template":"verification","params":{},"locale":null,"idempotencyKey":"k"}"#,
        #"{ \#(head) , "type" : "email", "to":"a@example.com","template":"signIn","params":{"linkSealed":"y"}, "locale":"de" }"#,
        #"{\#(head),"type":"push","deviceToken":"\#(String(repeating: "ab", count: 32))","environment":"sandbox","topic":"t","payload":{"k":"v"}}"#,
        #"{\#(head),"type":"apple","action":"revoke","user":"u","clientId":"c","redirectUri":null,"params":{"authorizationCodeSealed":"z"}}"#,
        // Escapes, non-ASCII, surrogate pairs, unknown members of every kind.
        #"{\#(head),"type":"sms","to":"+15555550100","template":"verification","params":{"app":"Caf\u00e9 \"A\" \\ \/ \n 😀 \ud83d\ude00 é"}}"#,
        #"{\#(head),"type":"sms","to":"+15555550100","template":"verification","extra":"x","more":{"a":"b"}}"#,
        #"{\#(head),"type":"sms","to":"+15555550100","template":"verification","n":1,"list":[1,2],"flag":true,"deep":{"a":{"b":1}}}"#,
        // Refusals: missing or wrong fields, wrong types, duplicates, malformed JSON.
        #"{\#(head),"type":"sms","template":"verification"}"#,
        #"{\#(head),"type":"fax","to":"+15555550100"}"#,
        #"{\#(head),"type":"sms","to":5555550100,"template":"verification"}"#,
        #"{\#(head),"type":"sms","to":{"a":"b"},"template":"verification"}"#,
        #"{\#(head),"type":"sms","to":"+15555550100","template":"verification","params":"x"}"#,
        #"{\#(head),"type":"sms","to":"+15555550100","template":"verification","params":{"a":1}}"#,
        #"{\#(head),"type":"sms","to":"+15555550100","to":"+15555550101","template":"verification"}"#,
        #"{\#(head),"type":"sms","to":"+15555550100","template":"verification","params":{"a":"1","a":"2"}}"#,
        #"{\#(head),"type":"sms","to":"+15555550100","template":"verification"} trailing"#,
        #"{\#(head),"type":"sms","to":"+15555550100","template":"verification",}"#,
        #"{\#(head),"type":"sms","to":"+1555\u0000","template":"verification"}"#,
        #"{\#(head),"type":"sms","to":"\ud800","template":"verification"}"#,
        #"{\#(head),"type":"sms","to":"\x","template":"verification"}"#,
        "{\(head),\"type\":\"sms\",\"to\":\"+1555\n\",\"template\":\"verification\"}",
        #"[1,2]"#, #""#, #"{"#, #"null"#,
        #"{"id":"not-a-uuid","project":"p","type":"sms"}"#,
    ]

    /// The decoded job or the refusal, compared by value (a description would print `params` in the
    /// dictionary's per-instance order and differ for equal jobs).
    static func outcome(_ body: Data, fastPath: Bool) -> Result<Job, JobCodec.DecodingError> {
        Result { () throws(JobCodec.DecodingError) -> Job in try JobCodec.decode(body, fastPath: fastPath) }
    }

    @Test("every body: the same job or the same refusal as JSONDecoder", arguments: bodies)
    func sameAsJSONDecoder(_ text: String) {
        let body = Data(text.utf8)
        #expect(Self.outcome(body, fastPath: true) == Self.outcome(body, fastPath: false))
    }

    @Test("the bodies Herald and ordinary producers write take the fast reader (the comparison above is not all fallbacks)")
    func fastReaderTakesOrdinaryBodies() {
        for text in Self.bodies.prefix(7) {
            #expect(JSONObjectReader.read(Array(text.utf8)) != nil, "\(text)")
        }
    }

    @Test("bytes that are not UTF-8 are refused by both, in a text without escapes and in one with", arguments: ["", #"\n"#])
    func invalidUTF8(_ escape: String) {
        var body = Data(#"{\#(Self.head),"type":"sms","to":""#.utf8)
        body.append(contentsOf: [0xC3, 0x28])
        body.append(contentsOf: Data(#"\#(escape)","template":"verification"}"#.utf8))
        #expect(JSONObjectReader.read(Array(body)) == nil)
        #expect(Self.outcome(body, fastPath: true) == Self.outcome(body, fastPath: false))
    }

    @Test("the reader reads what it should: strings with escapes, objects of strings, null; and nothing else")
    func reader() {
        #expect(
            JSONObjectReader.read(Array(#" {"a":"x\u00e9\n","b":{"c":"d"},"e":null} "#.utf8))
                == ["a": .string("xé\n"), "b": .strings(["c": "d"]), "e": .null])
        for text in [#"{"a":1}"#, #"{"a":{"b":null}}"#, #"{"a":{"b":{"c":"d"}}}"#, #"{"a":"b","a":"c"}"#, #"{"a":"b"}x"#, #"{'a':"b"}"#] {
            #expect(JSONObjectReader.read(Array(text.utf8)) == nil, "\(text)")
        }
    }

    @Test("a member's bytes become text as String(validating:) makes it: ASCII, other UTF-8, and bytes that are not UTF-8 anywhere")
    func memberText() {
        let sequences: [[UInt8]] = [
            [0xC3, 0xA9], [0xE2, 0x82, 0xAC], [0xF0, 0x9F, 0x98, 0x80],  // é € 😀
            [0xFF], [0xC3], [0xC3, 0x28], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0x80],  // not UTF-8
        ]
        for length in 0...18 {
            let plain = [UInt8](repeating: UInt8(ascii: "k"), count: length)
            #expect(plain.withUnsafeBufferPointer(JSONObjectReader.text) == String(repeating: "k", count: length))
            for position in 0...length {
                for sequence in sequences {
                    var bytes = plain
                    bytes.insert(contentsOf: sequence, at: position)
                    let read = bytes.withUnsafeBufferPointer(JSONObjectReader.text)
                    #expect(read == String(validating: bytes, as: UTF8.self), "\(sequence) at \(position) of \(length)")
                }
            }
        }
    }
}
