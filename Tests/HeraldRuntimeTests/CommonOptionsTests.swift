import Testing

@testable import HeraldRuntime

@Suite("herald-admin's --config before or after the subcommand")
struct CommonOptionsTests {
    @Test(
        "--config and its value move behind the subcommand and its arguments; nothing else moves",
        arguments: [
            (["--config", "a.yaml", "topology", "status"], ["topology", "status", "--config", "a.yaml"]),
            (["--config=a.yaml", "dead-letters", "show", "id1"], ["dead-letters", "show", "id1", "--config=a.yaml"]),
            (["topology", "status", "--config", "a.yaml"], ["topology", "status", "--config", "a.yaml"]),
            (["dead-letters", "--config", "a.yaml", "replay", "--limit", "5"], ["dead-letters", "replay", "--limit", "5", "--config", "a.yaml"]),
            (["topology", "status", "--config"], ["topology", "status", "--config"]),
            (["--config", "a.yaml", "x", "--", "--config", "b"], ["x", "--config", "a.yaml", "--", "--config", "b"]),
        ])
    func reorders(_ arguments: [String], _ expected: [String]) {
        #expect(CommonOptions.movingConfigLast(arguments) == expected)
    }
}
