import HeraldCore
import HeraldCurl

/// The channel for each provider of `sms.providers`, in order.
public enum SMSChannels {
    /// `print` writes a console provider's lines.
    public static func make(_ settings: SMSSettings, client: CurlClient, print: @escaping @Sendable (String) -> Void) -> [any SMSChannel] {
        settings.providers.map { provider -> any SMSChannel in
            switch provider.account {
            case .twilio(let account):
                TwilioChannel(client: client, provider: provider, account: account, callbackBaseURL: settings.callbackBaseURL)
            case .vonage(let account):
                VonageChannel(client: client, provider: provider, account: account, callbackBaseURL: settings.callbackBaseURL)
            case .telnyx(let account):
                TelnyxChannel(client: client, provider: provider, account: account, callbackBaseURL: settings.callbackBaseURL)
            case .http(let gateway):
                HTTPGatewayChannel(name: provider.name, client: client, settings: gateway)
            case .console:
                ConsoleChannel(name: provider.name, print: print)
            }
        }
    }
}
