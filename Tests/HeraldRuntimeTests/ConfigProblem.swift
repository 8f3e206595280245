import HeraldRuntime
import Testing

/// The error a configuration text stops with (nil: it loads); any other error is a test failure.
func configProblem(_ yaml: String, environment: [String: String] = [:]) -> ConfigError? {
    do {
        _ = try ConfigurationLoader.parse(yaml: yaml, environment: environment)
        return nil
    } catch let error as ConfigError {
        return error
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}
