import HeraldCore

/// Every line herald-admin prints goes through here (it shadows `Swift.print` in this module): values
/// come from clients, broker users and providers (a locale, a producer's name, a gateway's error), and an
/// escape sequence or a line break among them could clear the operator's screen or forge a line of
/// output. Control characters are printed as escapes; tabs stay, as they separate the columns. JSON
/// output, which escapes its own strings, is written with `Swift.print`.
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    Swift.print(LogText.escaped(items.map { "\($0)" }.joined(separator: separator), keepingTabs: true), terminator: terminator)
}
