import Foundation

/// What a job asks a worker to do; also its routing key and queue suffix.
public enum JobType: String, Sendable, Codable, CaseIterable {
    case sms, email, push, apple
}

/// A delivery job, schema v1: the contract between producers and the workers (`JobCodec` is its wire
/// form, deploy/asyncapi.yaml documents it). Workers accept jobs signed by herald-api (`JobSignature`)
/// that match its ledger row, and jobs of configured producers (`ForeignJobPolicy`).
///
/// Secrets inside (`params.codeSealed`, `linkSealed`, `secretSealed`) are sealed with `Sealer`, bound to
/// `id` and the destination.
public struct Job: Sendable, Equatable {
    /// The body schema this code writes and reads (AMQP header `x-herald-schema`).
    public static let schemaVersion = 1

    /// AMQP headers a job keeps when a worker or herald-admin republishes it (retry, throttle, dead
    /// letter, replay); not the broker's own `x-death` bookkeeping.
    public static let carriedHeaders: Set<String> = ["traceparent", JobHeader.schema, JobHeader.signature, JobHeader.producer]

    /// Job id; also the AMQP `message_id` and the idempotency record's key.
    public var id: UUID
    public var project: String
    public var createdAt: Date
    /// Workers drop the job after this instant: a late code is useless.
    public var expiresAt: Date
    /// BCP 47 language for templates (nil = the project default).
    public var locale: String?
    /// Stable per logical message; equal to the id unless a producer sets its own.
    public var idempotencyKey: String
    public var payload: Payload

    /// Per-type content.
    public enum Payload: Sendable, Equatable {
        case sms(SMSMessage)
        case email(EmailMessage)
        case push(PushMessage)
        case apple(AppleMessage)
    }

    public var type: JobType {
        switch payload {
        case .sms: .sms
        case .email: .email
        case .push: .push
        case .apple: .apple
        }
    }

    /// Who the job is for, unmasked: the number, the address, the device token, the Herald user.
    public var recipient: String {
        switch payload {
        case .sms(let message): message.to
        case .email(let message): message.to
        case .push(let message): message.deviceToken
        case .apple(let message): message.user
        }
    }

    /// What the job sends, as operators see it: the template, `silentPush`, or the Apple action.
    public var templateName: String {
        switch payload {
        case .sms(let message): message.template.rawValue
        case .email(let message): message.template.rawValue
        case .push: "silentPush"
        case .apple(let message): message.action.rawValue
        }
    }

    public init(
        id: UUID = UUID(), project: String, createdAt: Date, expiresAt: Date, locale: String? = nil,
        idempotencyKey: String? = nil, payload: Payload
    ) {
        self.id = id
        self.project = project
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.locale = locale
        self.idempotencyKey = idempotencyKey ?? id.lowercasedText
        self.payload = payload
    }
}

/// An SMS to send: a template name and its parameters, or raw text.
public struct SMSMessage: Sendable, Equatable {
    /// Template names the worker knows; `text` sends `params.text` verbatim.
    public enum Template: String, Sendable, CaseIterable {
        case verification, mfa, text
    }

    /// Destination in E.164.
    public var to: String
    public var template: Template
    /// Template parameters; the code travels as `codeSealed`.
    public var params: [String: String]

    public init(to: String, template: Template, params: [String: String]) {
        self.to = to
        self.template = template
        self.params = params
    }
}

/// A silent push that proves the request comes from the real app: the receipt and (sealed) secret the
/// iOS SDK hands back with its next `sendVerificationCode`.
public struct PushMessage: Sendable, Equatable {
    /// APNs host family, from the client's `isSandbox`.
    public enum Environment: String, Sendable, CaseIterable {
        case sandbox, production
    }

    /// The APNs device token, lowercase hex.
    public var deviceToken: String
    public var environment: Environment
    /// `apns-topic`: the app's bundle id.
    public var topic: String
    /// Receipt (not secret) and `secretSealed`.
    public var payload: [String: String]

    public init(deviceToken: String, environment: Environment, topic: String, payload: [String: String]) {
        self.deviceToken = deviceToken
        self.environment = environment
        self.topic = topic
        self.payload = payload
    }
}

/// An email to send: a template and its parameters. The sign-in link travels sealed (`linkSealed`),
/// because it is as good as a password until it is used or expires.
public struct EmailMessage: Sendable, Equatable {
    /// Template names the worker knows (`<templateDir>/<locale>/<name>.{subject,txt,html}`).
    public enum Template: String, Sendable, CaseIterable {
        /// EMAIL_SIGNIN: the sign-in link.
        case signInLink
        /// VERIFY_EMAIL: proves the account's address.
        case verifyEmail
        /// PASSWORD_RESET: a link to the page that sets a new password.
        case resetPassword
        /// VERIFY_AND_CHANGE_EMAIL, to the new address: the account moves to it when the link is opened.
        case verifyAndChangeEmail
        /// RECOVER_EMAIL, to the old address after a change: a link that puts it back.
        case recoverEmail
    }

    /// The recipient, normalized.
    public var to: String
    public var template: Template
    /// `linkSealed`, `app`, …
    public var params: [String: String]

    public init(to: String, template: Template, params: [String: String]) {
        self.to = to
        self.template = template
        self.params = params
    }
}

/// A Sign in with Apple task for herald-apple-worker: revoke the user's Apple tokens, given an
/// authorization code from a fresh Apple sign-in (the code travels sealed, `authorizationCodeSealed`;
/// once exchanged, a retry carries the refresh token sealed instead, `refreshTokenSealed`).
public struct AppleMessage: Sendable, Equatable {
    /// What to do (only revocation so far).
    public enum Action: String, Sendable, CaseIterable {
        case revoke
    }

    public var action: Action
    /// The Herald user (localId) whose Apple authorization is revoked; the ledger's destination.
    public var user: String
    /// The Apple client id (bundle id or Services id) the code was issued to.
    public var clientId: String
    /// The redirect URI of the web flow that produced the code (Apple checks it); nil for apps.
    public var redirectUri: String?
    /// `authorizationCodeSealed` or `refreshTokenSealed`.
    public var params: [String: String]

    public init(action: Action = .revoke, user: String, clientId: String, redirectUri: String? = nil, params: [String: String]) {
        self.action = action
        self.user = user
        self.clientId = clientId
        self.redirectUri = redirectUri
        self.params = params
    }
}
