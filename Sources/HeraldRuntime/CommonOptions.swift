import ArgumentParser

/// Options every Herald executable takes.
public struct CommonOptions: ParsableArguments {
    @Option(name: .long, help: "Configuration file (default: $HERALD_CONFIG, else config/herald.yaml).")
    public var config: String?

    public init() {}
}
