import HeraldCore
import NIOCore
import Testing

@testable import HeraldAPI

/// Request bodies read by the byte-level reader must read exactly as `JSONSerialization` reads them:
/// every accessor a handler uses, on bodies the reader takes and bodies it hands on.
@Suite("Wire bodies: the fast reader and JSONSerialization agree")
struct WireBodyTests {
    static let bodies = [
        #"{"phoneNumber":"+15555550100","recaptchaToken":"t0k3n"}"#,
        #" { "phone_number" : "+1 555 555 0100" , "tenantId" : null } "#,
        #"{"phoneNumber":"","iosReceipt":"YWJj","autoRetrievalInfo":{"appSignatureHash":"h4sh"}}"#,
        #"{"text":"caf\u00e9 \ud83d\ude00 \"quoted\" \\ \/ \n","empty":{}}"#,
        #"{"sessionInfo":"abc","code":123456,"returnSecureToken":true}"#,
        #"{"idToken":"x","deleteAttribute":["DISPLAY_NAME","PHOTO_URL"],"flag":"true"}"#,
        #"{"a":"1","a":"2"}"#,
        #"{"customAttributes":{"role":"admin"},"number":1.5}"#,
    ]
    static let names = [
        "phoneNumber", "recaptchaToken", "tenantId", "iosReceipt", "autoRetrievalInfo", "text", "empty", "sessionInfo", "code",
        "returnSecureToken", "idToken", "deleteAttribute", "flag", "a", "customAttributes", "number", "absent",
    ]

    /// Everything a handler can ask of a body, as text, nested objects included.
    static func reading(_ body: WireBody) -> [String] {
        names.flatMap { name -> [String] in
            var seen = [
                "\(name) string=\(body.string(name) ?? "-") bool=\(body.bool(name).map(String.init) ?? "-")",
                "\(name) strings=\(body.strings(name)) contains=\(body.contains(name))",
            ]
            if let nested = body.object(name) {
                seen.append("\(name) object: " + names.map { "\($0)=\(nested.string($0) ?? "-")" }.joined(separator: ","))
            }
            return seen
        }
    }

    @Test("each body reads the same both ways; the bodies of strings, objects of strings and nulls take the fast path")
    func agree() throws {
        var fast = 0
        for text in Self.bodies {
            let bytes = Array(text.utf8)
            let read = try WireBody.parse(ByteBuffer(bytes: bytes), contentType: "application/json")
            let reference = try WireBody.parseWithFoundation(bytes)
            #expect(Self.reading(read) == Self.reading(reference), "\(text)")
            if JSONObjectReader.read(bytes) != nil { fast += 1 }
        }
        #expect(fast == 4)
    }

    @Test("a camelCase name also reads its snake_case spelling, from either reader; the camelCase one wins when both are sent")
    func snakeCase() throws {
        for text in [
            #"{"phone_number":"+15555550100","session_info":"s"}"#, #"{"phoneNumber":"+15555550100","session_info":"s"}"#,
            #"{"phone_number":"+15555550199","phoneNumber":"+15555550100","sessionInfo":"s"}"#,
        ] {
            for body in [try WireBody.parse(ByteBuffer(string: text), contentType: nil), try WireBody.parseWithFoundation(Array(text.utf8))] {
                #expect(body.string("phoneNumber") == "+15555550100", "\(text)")
                #expect(body.string("sessionInfo") == "s" && body.contains("sessionInfo"), "\(text)")
                #expect(body.string("tenantId") == nil && body.contains("tenantId") == false, "\(text)")
            }
        }
    }

    @Test("what neither reads is INVALID_JSON")
    func invalid() {
        for text in [#"{"a":"1""#, #"["a"]"#, "nonsense"] {
            #expect(throws: HeraldError.self) { try WireBody.parse(ByteBuffer(string: text), contentType: "application/json") }
        }
        // {"a":"<0xFF>"}: not UTF-8.
        let badUTF8: [UInt8] = [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D]
        #expect(throws: HeraldError.self) { try WireBody.parse(ByteBuffer(bytes: badUTF8), contentType: nil) }
    }

    @Test("a form content type in any letter case reads the body as a form, unless the body is a JSON object")
    func formContentType() throws {
        for contentType in [
            "application/x-www-form-urlencoded", "Application/X-WWW-Form-URLEncoded; charset=UTF-8", "APPLICATION/X-WWW-FORM-URLENCODED",
        ] {
            let form = try WireBody.parse(ByteBuffer(string: "grant_type=refresh_token&refresh_token=r%2B1"), contentType: contentType)
            #expect(form.string("grant_type") == "refresh_token", "\(contentType)")
            #expect(form.string("refresh_token") == "r+1", "\(contentType)")
            let json = try WireBody.parse(ByteBuffer(string: #" {"grant_type":"x"}"#), contentType: contentType)
            #expect(json.string("grant_type") == "x", "\(contentType)")
        }
        for contentType in ["application/json", "application/x-www-form", "text/plain", ""] {
            #expect(throws: HeraldError.self, "\(contentType)") { try WireBody.parse(ByteBuffer(string: "a=b"), contentType: contentType) }
        }
    }
}
