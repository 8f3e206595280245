/// Numbers reserved for fiction (films, documentation, tests): the only ones `phone.testNumbers` may
/// list unless a project opts out (`phone.testNumbersAllowReal`). A fixed code on a real number would be
/// a standing login into whoever owns it. The list, by numbering plan:
///
/// - NANP (+1): every number whose exchange (the three digits after the area code) is 555, as in the
///   guides' own example +1 650-555-3434 (the strictly fictional block is 555-0100–0199; Herald keeps the
///   whole exchange, as Firebase's examples use it).
/// - United Kingdom (+44), Ofcom's drama ranges: mobile 07700 900000–900999; London 020 7946 0000–0999;
///   0113, 0114, 0115, 0116, 0117, 0118, 0121, 0131, 0141, 0151, 0161 496 0000–0999; 0191 498 0000–0999;
///   028 9649 6000–6999; 029 2018 0000–0999; 01632 960000–960999; 0808 157 0000–0999; 0909 879 0000–0999;
///   0306 999 0000–0999.
/// - Australia (+61), ACMA's drama numbers: mobile 0491 570 000–0491 579 999; geographic 02, 03, 07, 08
///   5550 xxxx and 7010 xxxx.
public enum FictionalNumbers {
    /// E.164 prefixes (without `+`) of the ranges above, besides NANP's 555 exchange.
    static let prefixes: [String] = {
        var list = ["447700900", "442079460", "441914980", "442896496", "442920180", "441632960", "448081570", "449098790", "443069990"]
        for area in ["113", "114", "115", "116", "117", "118", "121", "131", "141", "151", "161"] { list.append("44" + area + "4960") }
        list += ["61491570", "61491571", "61491572", "61491573", "61491574", "61491575", "61491576", "61491577", "61491578", "61491579"]
        for area in ["2", "3", "7", "8"] { list += ["61" + area + "5550", "61" + area + "7010"] }
        return list
    }()

    /// True when `e164` (`+16505553434`) is in one of the fictional ranges.
    public static func contains(_ e164: String) -> Bool {
        guard e164.hasPrefix("+") else { return false }
        let digits = e164.dropFirst()
        if digits.hasPrefix("1"), digits.count == 11 {
            return digits.dropFirst(4).prefix(3) == "555"
        }
        return prefixes.contains { digits.hasPrefix($0) }
    }
}
