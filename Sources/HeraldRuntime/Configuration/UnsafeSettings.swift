import HeraldChannels
import HeraldCore

/// Settings that are valid but unsafe outside development: each starts, and each is named once at
/// start-up (a warning line) and by `herald-admin check` (which fails on any, for a deployment's CI).
/// With `devMode: true` nothing is reported: that mode is for one laptop.
public enum UnsafeSettings {
    /// One finding: the key to look at, and why it is unsafe.
    public struct Finding: Sendable, Equatable, CustomStringConvertible {
        public var key: String
        public var problem: String
        public var description: String { "\(key): \(problem)" }
    }

    /// Every unsafe setting of `configuration`, in the file's order.
    public static func findings(in configuration: HeraldConfiguration) -> [Finding] {
        guard configuration.devMode == false else { return [] }
        var findings: [Finding] = []
        if IPAddress.isLoopback(host: configuration.http.host) == false, configuration.admin.cookieSecure == false {
            findings.append(
                Finding(
                    key: "admin.cookieSecure",
                    problem:
                        "false while herald-api listens on \(configuration.http.host): the status page's session cookie would also travel over plain HTTP"
                ))
        }
        for (index, project) in configuration.projects.enumerated() where project.appVerification.required == false {
            findings.append(
                Finding(
                    key: "projects[\(index)].appVerification.required",
                    problem: "false: project '\(project.id)' sends SMS without proof that the request comes from its app (SMS pumping)"))
        }
        for (index, provider) in configuration.sms.providers.enumerated() {
            let (url, key): (String?, String)
            switch provider.account {
            case .http(let gateway): (url, key) = (gateway.url, configuration.sms.providersListed ? "sms.providers[\(index)].url" : "sms.http.url")
            case .twilio, .vonage, .telnyx: (url, key) = (provider.baseURL, "sms.providers[\(index)].baseUrl")
            case .console: continue
            }
            guard let url, url.lowercased().hasPrefix("http://"), let host = ServerURL(url)?.host, IPAddress.isLoopback(host: host) == false
            else { continue }
            findings.append(
                Finding(
                    key: key, problem: "plain http:// to \(host): the provider's credentials and every code cross the network unencrypted"))
        }
        if let url = configuration.sms.callbackBaseURL, url.lowercased().hasPrefix("http://"), let host = ServerURL(url)?.host,
            IPAddress.isLoopback(host: host) == false
        {
            findings.append(
                Finding(
                    key: "sms.callbackBaseUrl",
                    problem: "plain http:// to \(host): providers' receipts and their signatures cross the network unencrypted"))
        }
        if configuration.email.provider == .smtp, configuration.email.smtpURL.lowercased().hasPrefix("smtp://"),
            configuration.email.requireTLS == false, let host = ServerURL(configuration.email.smtpURL)?.host,
            IPAddress.isLoopback(host: host) == false
        {
            findings.append(
                Finding(
                    key: "email.smtp.requireTLS",
                    problem:
                        "false with smtp://\(host): sign-in links may go to the relay unencrypted if STARTTLS is not offered or is stripped; set requireTLS: true or use smtps://"
                ))
        }
        return findings
    }
}
