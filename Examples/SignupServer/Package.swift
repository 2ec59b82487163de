// swift-tools-version: 6.2
import PackageDescription

// A sign-up server built on a ServiceGraph: Hummingbird for HTTP, swift-service-lifecycle for startup
// and graceful shutdown in the graph's order, SQLite (sqlite-nio) for storage. A package of its own so
// that ServiceGraph itself keeps no dependencies.
let package = Package(
    name: "SignupServer",
    platforms: [.macOS(.v15)],
    products: [
        // The adapter between a graph and a ServiceGroup: small enough to copy into an application.
        .library(name: "GraphLifecycle", targets: ["GraphLifecycle"]),
        .executable(name: "SignupServer", targets: ["SignupServer"]),
    ],
    dependencies: [
        .package(name: "ServiceGraph", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/vapor/sqlite-nio", from: "1.13.2"),
    ],
    targets: [
        .target(
            name: "GraphLifecycle",
            dependencies: [
                .product(name: "ServiceGraph", package: "ServiceGraph"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "SignupApp",
            dependencies: [
                "GraphLifecycle",
                .product(name: "ServiceGraph", package: "ServiceGraph"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
            ]
        ),
        .executableTarget(
            name: "SignupServer",
            dependencies: ["SignupApp", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "GraphLifecycleTests",
            dependencies: [
                "GraphLifecycle",
                .product(name: "ServiceGraph", package: "ServiceGraph"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "SignupAppTests",
            dependencies: [
                "SignupApp",
                .product(name: "ServiceGraph", package: "ServiceGraph"),
                .product(name: "ServiceGraphTesting", package: "ServiceGraph"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ]
        ),
        // Starts the built server as a child process and talks to it over loopback (depends on the
        // executable so that `swift test` builds it first).
        .testTarget(
            name: "SignupServerEndToEndTests",
            dependencies: [
                "SignupServer",
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
