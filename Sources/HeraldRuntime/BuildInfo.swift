/// What was built: the release version and the git revision the build plugin read at build time
/// (`-dirty` when the checkout had uncommitted changes; `unknown` outside a git checkout).
public enum BuildInfo {
    /// Herald's version.
    public static let version = "0.11.0-dev"
    /// The git revision of the build.
    public static let revision = BuildRevision.value
    /// What `--version` prints.
    public static let versionLine = "\(version) (\(revision))"
}
