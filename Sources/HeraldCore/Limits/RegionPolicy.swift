/// Firebase's SMS region policy: an allow-list (only these regions) or a deny-list (all but these),
/// by the ISO region derived from the number.
public enum RegionPolicy {
    /// The detail Firebase sends with OPERATION_NOT_ALLOWED for a refused region, as client SDKs show
    /// it (seen verbatim in invertase/react-native-firebase#8473).
    public static let refusalDetail = "SMS unable to be sent until this region enabled by the app developer"

    /// True when SMS to `region` may be sent under `regions`.
    public static func allows(_ region: String, _ regions: ProjectSettings.Regions) -> Bool {
        if regions.allow.isEmpty == false { return regions.allow.contains(region) }
        return regions.deny.contains(region) == false
    }
}
