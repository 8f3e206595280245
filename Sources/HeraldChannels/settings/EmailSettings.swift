import HeraldCore

/// `email`: who sign-in mails come from, their texts, and the SMTP server herald-email-worker uses.
public struct EmailSettings: Sendable {
    /// Placeholders an email template may use.
    public static let placeholders: Set<String> = ["link", "app", "email", "oldEmail", "newEmail"]
    /// Email template files per locale (`en` must hold all): `<template>.subject`, `.txt`, `.html` for each
    /// `EmailMessage.Template`.
    public static let templateFiles = EmailMessage.Template.allCases.flatMap { template in
        ["subject", "txt", "html"].map { "\(template.rawValue).\($0)" }
    }

    /// `smtp`, or `console` (prints each mail, link included; devMode only).
    public var provider: Provider

    /// Where sign-in mails go.
    public enum Provider: String, Sendable, CaseIterable {
        /// The SMTP relay (`email.smtp`).
        case smtp
        /// The terminal, for development (devMode only).
        case console
    }
    /// Submissions per period across every email worker (protects the relay's own limits).
    public var rate: RatePolicy
    /// `Name <address>`; the address is also the SMTP envelope sender (MAIL FROM, where bounces go).
    public var from: Mailbox
    public var replyTo: Mailbox?
    /// Sender registered with Apple's private email relay; mail to `@privaterelay.appleid.com` must
    /// come from it or Apple drops it. nil = `from`.
    public var privateRelayFrom: Mailbox?
    /// `<dir>/<locale>/signInLink.{subject,txt,html}`.
    public var templateDir: String
    /// Loaded from `templateDir` by `ConfigurationLoader`.
    public var templates: TemplateCatalog
    /// `smtp://host:port` (STARTTLS when offered, required with `requireTLS`) or `smtps://host:port`.
    public var smtpURL: String
    public var smtpUsername: String?
    public var smtpPassword: String?
    /// Refuse to send unless STARTTLS succeeds (never downgrade).
    public var requireTLS: Bool
    /// The EHLO name (libcurl would otherwise send the container's hostname).
    public var heloName: String
    public var timeout: Duration
    /// Extra CA bundle (PEM) for the SMTP server's certificate.
    public var caFile: String?

    public init(
        provider: Provider, rate: RatePolicy, from: Mailbox, replyTo: Mailbox?, privateRelayFrom: Mailbox?, templateDir: String,
        templates: TemplateCatalog, smtpURL: String, smtpUsername: String?, smtpPassword: String?, requireTLS: Bool, heloName: String,
        timeout: Duration, caFile: String?
    ) {
        self.provider = provider
        self.rate = rate
        self.from = from
        self.replyTo = replyTo
        self.privateRelayFrom = privateRelayFrom
        self.templateDir = templateDir
        self.templates = templates
        self.smtpURL = smtpURL
        self.smtpUsername = smtpUsername
        self.smtpPassword = smtpPassword
        self.requireTLS = requireTLS
        self.heloName = heloName
        self.timeout = timeout
        self.caFile = caFile
    }
}
