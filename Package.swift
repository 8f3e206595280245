// swift-tools-version:6.2
import PackageDescription

/// Settings shared by every Herald target.
let swiftSettings: [SwiftSetting] = [
    // https://github.com/swiftlang/swift-evolution/blob/main/proposals/0335-existential-any.md
    .enableUpcomingFeature("ExistentialAny"),
    // https://github.com/swiftlang/swift-evolution/blob/main/proposals/0444-member-import-visibility.md
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "herald",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "herald-api", targets: ["herald-api"]),
        .executable(name: "herald-sms-worker", targets: ["herald-sms-worker"]),
        .executable(name: "herald-email-worker", targets: ["herald-email-worker"]),
        .executable(name: "herald-push-worker", targets: ["herald-push-worker"]),
        .executable(name: "herald-apple-worker", targets: ["herald-apple-worker"]),
        .executable(name: "herald-admin", targets: ["herald-admin"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
    ],
    targets: [
        // Pure domain: no I/O, no logging. Time comes in, decisions go out.
        .target(
            name: "HeraldCore",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),

        // C libraries from Debian, each with a header of static-inline shims for variadic calls.
        .systemLibrary(name: "CRabbitMQ", pkgConfig: "librabbitmq", providers: [.apt(["librabbitmq-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CCrypt", providers: [.apt(["libcrypt-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // herald-api's allocator: see Sources/herald-api/Allocator.swift.
        .systemLibrary(name: "CJemalloc", pkgConfig: "jemalloc", providers: [.apt(["libjemalloc-dev"])]),

        // Adapters: the only code that touches each C library.
        .target(
            name: "HeraldAMQP",
            dependencies: [
                "CRabbitMQ", "HeraldCore", "HeraldCurl",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "HeraldCurl",
            dependencies: ["CCurl", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "HeraldStore",
            dependencies: [
                "CSQLite", "HeraldCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "HeraldChannels",
            dependencies: [
                "HeraldCore", "HeraldCurl",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                "Yams",
            ],
            swiftSettings: swiftSettings
        ),

        // Writes the git revision into HeraldRuntime at build time (`--version`, `herald_build_info`).
        .plugin(name: "BuildInfoPlugin", capability: .buildTool(), path: "Sources/BuildInfoPlugin"),
        .plugin(name: "OpenAPIPlugin", capability: .buildTool(), path: "Sources/OpenAPIPlugin"),

        // Boot shared by every executable: reading the configuration, logging, metrics, health endpoints.
        .target(
            name: "HeraldRuntime",
            dependencies: [
                "HeraldAMQP", "HeraldChannels", "HeraldCore", "HeraldStore", "Yams",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings,
            plugins: ["BuildInfoPlugin"]
        ),

        // Processes' insides.
        .target(
            name: "HeraldAPI",
            dependencies: [
                "CCrypt", "HeraldAMQP", "HeraldChannels", "HeraldCore", "HeraldCurl", "HeraldRuntime", "HeraldStore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings,
            plugins: ["OpenAPIPlugin"]
        ),
        .target(
            name: "HeraldWorker",
            dependencies: [
                "HeraldAMQP", "HeraldChannels", "HeraldCore", "HeraldRuntime",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        // Executables: one small @main file each.
        .executableTarget(
            name: "herald-api",
            dependencies: [
                "CJemalloc", "HeraldAPI", "HeraldCore", "HeraldRuntime",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "herald-sms-worker",
            dependencies: [
                "HeraldChannels", "HeraldCore", "HeraldCurl", "HeraldRuntime", "HeraldStore", "HeraldWorker",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "herald-email-worker",
            dependencies: [
                "HeraldChannels", "HeraldCore", "HeraldCurl", "HeraldRuntime", "HeraldStore", "HeraldWorker",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "herald-push-worker",
            dependencies: [
                "HeraldChannels", "HeraldCore", "HeraldRuntime", "HeraldStore", "HeraldWorker",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "herald-apple-worker",
            dependencies: [
                "HeraldChannels", "HeraldCore", "HeraldCurl", "HeraldRuntime", "HeraldStore", "HeraldWorker",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "herald-admin",
            dependencies: [
                "HeraldAMQP", "HeraldCore", "HeraldCurl", "HeraldRuntime", "HeraldStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // For developers: measures builds (`make bench`); built with the rest, not shipped as a product.
        .executableTarget(
            name: "herald-bench",
            dependencies: [
                "HeraldAMQP", "HeraldChannels", "HeraldCore", "HeraldCurl", "HeraldRuntime", "HeraldStore", "HeraldTesting",
                "HeraldWorker",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // Fakes and helpers shared by tests and the benchmark.
        .target(
            name: "HeraldTesting",
            dependencies: [
                "HeraldAMQP", "HeraldCore", "HeraldCurl", "HeraldRuntime", "HeraldStore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: swiftSettings
        ),

        // test targets
        .testTarget(
            name: "HeraldCoreTests", dependencies: ["HeraldCore", "HeraldTesting", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "HeraldRuntimeTests",
            dependencies: [
                "HeraldAMQP", "HeraldChannels", "HeraldCore", "HeraldRuntime", "HeraldStore", "HeraldTesting",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "HeraldAMQPTests",
            dependencies: ["HeraldAMQP", "HeraldCore", "HeraldTesting", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "HeraldCurlTests", dependencies: ["HeraldCurl", "HeraldTesting"], swiftSettings: swiftSettings),
        .testTarget(
            name: "HeraldChannelsTests",
            dependencies: [
                "HeraldChannels", "HeraldCore", "HeraldCurl", "HeraldTesting", .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "HeraldStoreTests",
            dependencies: [
                "HeraldCore", "HeraldStore", "HeraldTesting", .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "HeraldAPITests",
            dependencies: [
                "HeraldAMQP", "HeraldAPI", "HeraldCore", "HeraldRuntime", "HeraldStore", "HeraldTesting",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldWorkerTests",
            dependencies: [
                "HeraldAMQP", "HeraldCore", "HeraldStore", "HeraldTesting", "HeraldWorker", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings),
        // End to end through the real executables (built with the tests), so it links none of them.
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "HeraldAMQP", "HeraldChannels", "HeraldCore", "HeraldRuntime", "HeraldStore", "HeraldTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                "Yams",
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
