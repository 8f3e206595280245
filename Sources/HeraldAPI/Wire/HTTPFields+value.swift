import HTTPTypes

extension HTTPFields {
    /// `self[name]`, without its join when the field appears once (every request header the Identity
    /// Toolkit routes read, normally): the subscript joins even a single value through the standard
    /// library's generic `joined(separator:)`, a cost per header per request. Several values are still
    /// joined by the subscript, as HTTP reads a repeated field.
    func value(_ name: HTTPField.Name) -> String? {
        guard let first = firstIndex(where: { $0.name == name }) else { return nil }
        if self[index(after: first)...].contains(where: { $0.name == name }) { return self[name] }
        return self[first].value
    }
}
