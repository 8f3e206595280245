import Crypto
import Foundation

/// Who published a job and whether a worker may send it: the job contract for producers other than
/// herald-api (`integrations.producers`, deploy/asyncapi.yaml).
///
/// A job with `x-herald-producer: <id>` of a configured producer is verified under that producer's key;
/// any other job (no header, or `herald-api`) under herald-api's key. A foreign job must then be for a
/// project and type its producer may use, a project that exists, a region the project allows, and carry
/// its text in plain form: sealed values (a code, a link) are made only by herald-api, which also keeps
/// the session they belong to. Pure: the worker asks the store about prefix blocks afterwards.
public struct ForeignJobPolicy: Sendable {
    let producers: [String: IntegrationSettings.Producer]
    /// Each producer's key, its pads hashed once.
    let signers: [String: KeyedHMAC]
    let projects: [String: ProjectSettings]
    let prefixDigits: Int

    /// The policy of `integrations`' producers over `projects`; `prefixDigits` is `limits.prefixDigits`.
    public init(integrations: IntegrationSettings, projects: [ProjectSettings], prefixDigits: Int) {
        self.init(
            producers: Dictionary(uniqueKeysWithValues: integrations.producers.map { ($0.id, $0) }),
            projects: Dictionary(uniqueKeysWithValues: projects.map { ($0.id, $0) }), prefixDigits: prefixDigits)
    }

    /// The AMQP header naming the producer.
    public static let header = JobHeader.producer

    /// A job's origin once its signature verified.
    public enum Origin: Sendable, Equatable {
        case heraldAPI
        case producer(String)

        public var id: String {
            switch self {
            case .heraldAPI: IntegrationSettings.heraldAPI
            case .producer(let id): id
            }
        }

        /// The producer a ledger row records: nil for herald-api's own jobs, whatever header they carry.
        public var foreignProducer: String? {
            if case .producer(let id) = self { id } else { nil }
        }
    }

    /// Why a job is dead-lettered; `reason` goes into `x-herald-reason` as it is.
    public struct Refusal: Error, Sendable, Equatable {
        public var reason: String
    }

    /// Checks the signature under the key the producer header names (`own`: herald-api's).
    public func authenticate(body: Data, producer: String?, signature: String?, own: KeyedHMAC) -> Result<Origin, Refusal> {
        let named = producer ?? IntegrationSettings.heraldAPI
        if named == IntegrationSettings.heraldAPI {
            guard JobSignature.verify(body, signature: signature, signer: own) else {
                return .failure(
                    Refusal(
                        reason:
                            "unauthenticated: \(signature == nil ? "no" : "an invalid") \(JobSignature.header) (herald-api signs its jobs; other producers set \(Self.header))"
                    ))
            }
            return .success(.heraldAPI)
        }
        guard let signer = signers[named] else {
            return .failure(Refusal(reason: "unauthenticated: unknown producer '\(named.prefix(64))' (integrations.producers)"))
        }
        guard JobSignature.verify(body, signature: signature, signer: signer) else {
            return .failure(
                Refusal(reason: "unauthenticated: \(signature == nil ? "no" : "an invalid") \(JobSignature.header) for producer '\(named)'"))
        }
        return .success(.producer(named))
    }

    /// A decoded foreign job's checks; on success, the prefix whose block the worker must check.
    public func admit(_ job: Job, from producer: String) -> Result<String, Refusal> {
        guard let configured = producers[producer] else { return .failure(Refusal(reason: "unauthenticated: unknown producer '\(producer)'")) }
        guard configured.projects.contains(job.project) else {
            return .failure(Refusal(reason: "forbidden: producer '\(producer)' may not publish for project '\(job.project.prefix(64))'"))
        }
        guard configured.types.contains(job.type) else {
            return .failure(Refusal(reason: "forbidden: producer '\(producer)' may not publish \(job.type.rawValue) jobs"))
        }
        guard let project = projects[job.project] else { return .failure(Refusal(reason: "unknown project '\(job.project.prefix(64))'")) }
        guard case .sms(let message) = job.payload else {
            return .failure(Refusal(reason: "forbidden: \(job.type.rawValue) jobs carry sealed values only herald-api makes"))
        }
        if let sealed = message.params.keys.sorted().first(where: { $0.hasSuffix("Sealed") }) {
            return .failure(Refusal(reason: "forbidden: foreign jobs may not carry sealed values (params.\(sealed))"))
        }
        guard message.template == .text else {
            return .failure(
                Refusal(
                    reason:
                        "forbidden: template '\(message.template.rawValue)' needs a code sealed by herald-api; foreign jobs send template 'text' with params.text"
                ))
        }
        guard let text = message.params["text"], text.isEmpty == false else {
            return .failure(Refusal(reason: "malformed job: params.text: missing (template 'text' sends it as it is)"))
        }
        guard let number = try? PhoneNumber(parsing: message.to) else {
            return .failure(Refusal(reason: "malformed job: to: not an E.164 phone number"))
        }
        guard RegionPolicy.allows(number.region, project.phone.regions) else {
            return .failure(
                Refusal(reason: "forbidden: region \(number.region) is not allowed for project '\(project.id)' (projects[].phone.regions)"))
        }
        return .success(number.prefix(digits: prefixDigits))
    }
}

extension ForeignJobPolicy {
    /// No foreign producers: only herald-api's jobs verify.
    public static let none = ForeignJobPolicy(producers: [:], projects: [:], prefixDigits: 6)

    init(producers: [String: IntegrationSettings.Producer], projects: [String: ProjectSettings], prefixDigits: Int) {
        self.producers = producers
        self.signers = producers.mapValues { KeyedHMAC(key: SymmetricKey(data: $0.key)) }
        self.projects = projects
        self.prefixDigits = prefixDigits
    }
}
