/// ITU country calling codes with the regions they serve and the national significant number lengths
/// accepted for them (a simplified form of libphonenumber's metadata: enough to reject numbers that are
/// clearly too short or too long, never to decide whether a number is assigned).
enum CallingCodes {
    struct Entry {
        let code: String
        let regions: [String]
        let lengths: ClosedRange<Int>
    }

    static let table: [String: Entry] = {
        var table: [String: Entry] = [:]
        for line in raw.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 3 else { continue }
            let bounds = fields[2].split(separator: "-").compactMap { Int($0) }
            let lengths = bounds.count == 2 ? bounds[0]...bounds[1] : bounds[0]...bounds[0]
            let code = String(fields[0])
            table[code] = Entry(code: code, regions: fields[1].split(separator: ",").map(String.init), lengths: lengths)
        }
        return table
    }()

    /// A national trunk prefix: what a caller dials inside the country before the national number, and
    /// which people also type after the calling code ("+49 0151…").
    struct TrunkPrefix: Equatable {
        let digits: String
        /// Some national numbers of the plan also start with these digits (Russia's 8-800): the prefix is
        /// then removed only from a number too long to be one with it.
        let beginsNumbers: Bool
    }

    /// Trunk prefixes by calling code, longest first: the plain-digit forms of libphonenumber's
    /// `national_prefix_for_parsing` (where that also selects a carrier, as in Brazil or Colombia, the
    /// prefix alone). A code not listed has none: Italy's leading 0 is part of the number.
    static let trunkPrefixes: [String: [TrunkPrefix]] = {
        var table: [String: [TrunkPrefix]] = [:]
        for line in trunkRaw.split(separator: "\n") {
            let halves = line.split(separator: "|")
            let prefixes = halves[0].split(separator: " ").map {
                TrunkPrefix(digits: String($0.filter(\.isNumber)), beginsNumbers: $0.hasSuffix("*"))
            }
            for code in halves[1].split(separator: " ") { table[String(code)] = prefixes }
        }
        return table
    }()

    static let longestTrunkPrefix = trunkPrefixes.values.joined().map(\.digits.utf8.count).max() ?? 0

    /// `prefixes | calling codes`; `*` marks a prefix some national numbers also start with.
    private static let trunkRaw = """
        1 | 1 692
        8* | 7 993
        06 | 36
        0 8* | 370
        80* 8 0 | 375
        0 | 20 27 31 32 33 40 41 43 44 46 49 51 53 54 55 57 58 60 61 62 63 64 66 81 82 84 86 90 91 92 93 94 95 98 211 212 213 218 231 \
        232 233 234 243 249 250 251 252 254 255 256 260 261 262 263 264 265 291 353 355 358 359 373 374 377 380 381 382 383 385 386 387 389 \
        421 423 508 590 591 593 594 595 596 598 686 850 855 856 880 886 961 962 963 964 966 967 970 971 972 976 977 994 995 996
        """

    /// `code regions lengths`, one per line; the first region is the default for the code.
    private static let raw = """
        1 US,CA,AG,AI,AS,BB,BM,BS,DM,DO,GD,GU,JM,KN,KY,LC,MP,MS,PR,SX,TC,TT,VC,VG,VI 10
        7 RU,KZ 10
        20 EG 8-10
        27 ZA 9
        30 GR 10
        31 NL 9
        32 BE 8-9
        33 FR 9
        34 ES 9
        36 HU 8-9
        39 IT,VA 6-11
        40 RO 9
        41 CH 9
        43 AT 4-13
        44 GB,GG,IM,JE 7-10
        45 DK 8
        46 SE 6-10
        47 NO,SJ 5-8
        48 PL 9
        49 DE 6-13
        51 PE 8-9
        52 MX 10
        53 CU 6-8
        54 AR 10-11
        55 BR 10-11
        56 CL 9
        57 CO 8-10
        58 VE 10
        60 MY 8-10
        61 AU,CX,CC 9
        62 ID 8-12
        63 PH 8-10
        64 NZ 8-10
        65 SG 8
        66 TH 8-9
        81 JP 9-10
        82 KR 8-10
        84 VN 9-10
        86 CN 10-11
        90 TR 10
        91 IN 10
        92 PK 9-10
        93 AF 9
        94 LK 9
        95 MM 7-10
        98 IR 10
        211 SS 9
        212 MA,EH 9
        213 DZ 8-9
        216 TN 8
        218 LY 9
        220 GM 7
        221 SN 9
        222 MR 8
        223 ML 8
        224 GN 8-9
        225 CI 10
        226 BF 8
        227 NE 8
        228 TG 8
        229 BJ 8-10
        230 MU 7-8
        231 LR 7-9
        232 SL 8
        233 GH 9
        234 NG 8-10
        235 TD 8
        236 CF 8
        237 CM 9
        238 CV 7
        239 ST 7
        240 GQ 9
        241 GA 7-8
        242 CG 9
        243 CD 7-9
        244 AO 9
        245 GW 7-9
        246 IO 7
        247 AC 5
        248 SC 7
        249 SD 9
        250 RW 9
        251 ET 9
        252 SO 7-9
        253 DJ 8
        254 KE 9-10
        255 TZ 9
        256 UG 9
        257 BI 8
        258 MZ 8-9
        260 ZM 9
        261 MG 9
        262 RE,YT 9
        263 ZW 9
        264 NA 8-9
        265 MW 7-9
        266 LS 8
        267 BW 7-8
        268 SZ 8
        269 KM 7
        290 SH 4-5
        291 ER 7
        297 AW 7
        298 FO 6
        299 GL 6
        350 GI 8
        351 PT 9
        352 LU 4-11
        353 IE 7-9
        354 IS 7-9
        355 AL 8-9
        356 MT 8
        357 CY 8
        358 FI,AX 5-12
        359 BG 7-9
        370 LT 8
        371 LV 8
        372 EE 7-8
        373 MD 8
        374 AM 8
        375 BY 9-10
        376 AD 6-9
        377 MC 8-9
        378 SM 6-10
        380 UA 9
        381 RS 6-12
        382 ME 8
        383 XK 8-9
        385 HR 8-9
        386 SI 8
        387 BA 8-9
        389 MK 8
        420 CZ 9
        421 SK 9
        423 LI 7-9
        500 FK 5
        501 BZ 7
        502 GT 8
        503 SV 8
        504 HN 8
        505 NI 8
        506 CR 8
        507 PA 7-8
        508 PM 6
        509 HT 8
        590 GP,BL,MF 9
        591 BO 8
        592 GY 7
        593 EC 8-9
        594 GF 9
        595 PY 9
        596 MQ 9
        597 SR 6-7
        598 UY 8
        599 CW,BQ 7-8
        670 TL 7-8
        672 NF 6
        673 BN 7
        674 NR 7
        675 PG 7-8
        676 TO 5-7
        677 SB 5-7
        678 VU 5-7
        679 FJ 7
        680 PW 7
        681 WF 6
        682 CK 5
        683 NU 4-7
        685 WS 5-10
        686 KI 5-8
        687 NC 6
        688 TV 5-7
        689 PF 6-8
        690 TK 4-7
        691 FM 7
        692 MH 7
        850 KP 8-10
        852 HK 8
        853 MO 8
        855 KH 8-9
        856 LA 8-10
        880 BD 6-10
        886 TW 8-9
        960 MV 7
        961 LB 7-8
        962 JO 8-9
        963 SY 8-9
        964 IQ 8-10
        965 KW 8
        966 SA 9
        967 YE 7-9
        968 OM 8
        970 PS 8-9
        971 AE 8-9
        972 IL 8-9
        973 BH 8
        974 QA 8
        975 BT 7-8
        976 MN 8
        977 NP 8-10
        992 TJ 9
        993 TM 8
        994 AZ 9
        995 GE 9
        996 KG 9
        998 UZ 9
        """

    /// NANP area codes outside the United States (everything else under +1 is US).
    static let nanpAreaCodes: [String: String] = {
        let groups: [(String, String)] = [
            (
                "CA",
                "204 226 236 249 250 257 263 289 306 343 354 365 367 368 382 387 403 416 418 428 431 437 438 450 460 468 474 506 514 519 548 579 581 584 587 600 604 613 639 647 672 683 705 709 742 753 778 780 782 807 819 825 867 873 879 902 905 942"
            ),
            ("AG", "268"), ("AI", "264"), ("AS", "684"), ("BB", "246"), ("BM", "441"), ("BS", "242"), ("DM", "767"),
            ("DO", "809 829 849"), ("GD", "473"), ("GU", "671"), ("JM", "658 876"), ("KN", "869"), ("KY", "345"),
            ("LC", "758"), ("MP", "670"), ("MS", "664"), ("PR", "787 939"), ("SX", "721"), ("TC", "649"),
            ("TT", "868"), ("VC", "784"), ("VG", "284"), ("VI", "340"),
        ]
        var map: [String: String] = [:]
        for (region, codes) in groups {
            for code in codes.split(separator: " ") { map[String(code)] = region }
        }
        return map
    }()
}
