import Foundation

/// Message templates per locale with Firebase-style fallback: `de-AT` → `de` → `en`.
public struct TemplateCatalog: Sendable {
    /// The locale every lookup falls back to last.
    public static let defaultLocale = "en"

    /// Templates by normalized locale (`de`, `de-at`, `zh-hans`), then by name.
    let locales: [String: [String: Template]]

    public init(_ locales: [String: [String: Template]]) {
        var normalized: [String: [String: Template]] = [:]
        for (locale, templates) in locales { normalized[Self.normalize(locale)] = templates }
        self.locales = normalized
    }

    /// Locales in the catalog.
    public var availableLocales: [String] { locales.keys.sorted() }

    /// The template `name` for `locale`, and the locale it came from.
    public func template(_ name: String, locale: String?) -> (template: Template, locale: String)? {
        for candidate in Self.fallbacks(for: locale) {
            if let template = locales[candidate]?[name] { return (template, candidate) }
        }
        return nil
    }

    /// `de_AT` or `de-AT` → [`de-at`, `de`, `en`].
    public static func fallbacks(for locale: String?) -> [String] {
        var chain: [String] = []
        if let locale, locale.isEmpty == false {
            var parts = normalize(locale).split(separator: "-").map(String.init)
            while parts.isEmpty == false {
                chain.append(parts.joined(separator: "-"))
                parts.removeLast()
            }
        }
        if chain.contains(defaultLocale) == false { chain.append(defaultLocale) }
        return chain
    }

    static func normalize(_ locale: String) -> String {
        locale.replacingOccurrences(of: "_", with: "-").lowercased()
    }
}
