// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "ServiceGraph",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "ServiceGraph", targets: ["ServiceGraph"]),
        .library(name: "ServiceGraphTesting", targets: ["ServiceGraphTesting"]),
    ],
    dependencies: [],
    targets: [
        .target(
            name: "ServiceGraph",
            dependencies: ["ServiceGraphShims"],
            swiftSettings: [
                // The core's invariant checks (`_internalInvariant`), in debug builds only.
                .define("SERVICEGRAPH_INTERNAL_CHECKS", .when(configuration: .debug))
            ]
        ),
        // The futex calls of the library's lock on Linux (C: `syscall` is variadic, which Swift does not import).
        .target(name: "ServiceGraphShims"),
        .target(name: "ServiceGraphTesting", dependencies: ["ServiceGraph"]),
        .testTarget(
            name: "ServiceGraphTests",
            dependencies: ["ServiceGraph", "ServiceGraphTestSupport", "KeyNameFixtures", "ServiceProtocolFixture"]
        ),
        // The hostile suites, each written from a feature's docs alone: a module of their own, so that an
        // optimized build compiles them beside the other tests rather than after them.
        .testTarget(name: "ServiceGraphHostileTests", dependencies: ["ServiceGraph", "ServiceGraphTestSupport"]),
        // The tests of what the library inlines into its callers (registration, the resolve fast paths,
        // value layouts): the one test module a release build optimizes (see the end of this file).
        .testTarget(name: "ServiceGraphOptimizedTests", dependencies: ["ServiceGraph", "ServiceGraphTestSupport"]),
        // The test doubles and generated keys both test targets use.
        .target(name: "ServiceGraphTestSupport", dependencies: ["ServiceGraph"], path: "Tests/ServiceGraphTestSupport"),
        // Keys of a second module, for names that read alike across modules.
        .target(name: "KeyNameFixtures", dependencies: ["ServiceGraph"], path: "Tests/KeyNameFixtures"),
        // A protocol named like swift-service-lifecycle's `Service`, to show the two names do not clash.
        .target(name: "ServiceProtocolFixture", path: "Tests/ServiceProtocolFixture"),
        .testTarget(
            name: "ServiceGraphTestingTests",
            dependencies: ["ServiceGraph", "ServiceGraphTesting", "ServiceGraphTestSupport"]
        ),
        .executableTarget(
            name: "CompositionRoot",
            dependencies: ["ServiceGraph"],
            path: "Examples/CompositionRoot"
        ),
        .executableTarget(
            name: "QuickStart",
            dependencies: ["ServiceGraph"],
            path: "Examples/QuickStart"
        ),
        // The seed patterns, each a runnable example with tests (Tests/ExampleTests).
        .executableTarget(
            name: "FeatureFlagRegistry",
            dependencies: ["ServiceGraph"],
            path: "Examples/FeatureFlagRegistry"
        ),
        .executableTarget(name: "ExplicitGraph", dependencies: ["ServiceGraph"], path: "Examples/ExplicitGraph"),
        .executableTarget(name: "CreatorMocks", dependencies: ["ServiceGraph"], path: "Examples/CreatorMocks"),
        .executableTarget(
            name: "UniqueServiceMocks",
            dependencies: ["ServiceGraph"],
            path: "Examples/UniqueServiceMocks"
        ),
        .executableTarget(name: "ChildGraphs", dependencies: ["ServiceGraph"], path: "Examples/ChildGraphs"),
        .testTarget(
            name: "ExampleTests",
            dependencies: [
                "ServiceGraph", "ServiceGraphTesting", "ServiceGraphTestSupport", "FeatureFlagRegistry",
                "ExplicitGraph", "CreatorMocks", "UniqueServiceMocks", "ChildGraphs",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets {
    var settings = target.swiftSettings ?? []
    settings.append(contentsOf: [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("InternalImportsByDefault"),
    ])
    // In a release build the tests' own code is compiled without optimization, except the tests of what
    // the library inlines into its callers (`ServiceGraphOptimizedTests`): the library, that code and the
    // examples are what a release build is to check, and optimizing all 30,000 lines of tests would take
    // most of the build (about six minutes of a continuous-integration run on two cores, against three).
    let isTestCode = target.type == .test || target.path?.hasPrefix("Tests/") == true
    if isTestCode && target.name != "ServiceGraphOptimizedTests" {
        settings.append(.unsafeFlags(["-Onone"], .when(configuration: .release)))
    }
    target.swiftSettings = settings
}
