import Foundation

/// A provider's JSON answer, read loosely: providers send numbers as strings and add fields without
/// notice, so a value is taken as text whether it came as a string or a number.
struct ProviderAnswer {
    let object: [String: Any]

    init?(_ body: Data) {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else { return nil }
        self.object = object
    }

    init(object: [String: Any]) {
        self.object = object
    }

    func text(_ key: String) -> String? { Self.text(object[key]) }

    func objects(_ key: String) -> [ProviderAnswer] {
        (object[key] as? [Any] ?? []).compactMap { ($0 as? [String: Any]).map(ProviderAnswer.init(object:)) }
    }

    func child(_ key: String) -> ProviderAnswer? { (object[key] as? [String: Any]).map(ProviderAnswer.init(object:)) }

    static func text(_ value: Any?) -> String? {
        switch value {
        case let text as String: text
        case let number as Int: String(number)
        case let number as Double: String(number)
        default: nil
        }
    }

    /// Short printable text (a message id, a code), else nil: a provider's answer is not trusted to be
    /// small or clean before it goes into the ledger, logs and metric labels.
    static func short(_ text: String?, limit: Int = 64) -> String? {
        text.flatMap { $0.isEmpty == false && $0.count <= limit && $0.unicodeScalars.allSatisfy { (0x21...0x7E).contains($0.value) } ? $0 : nil }
    }
}
