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
        .target(name: "ServiceGraph"),
        .target(name: "ServiceGraphTesting", dependencies: ["ServiceGraph"]),
        .testTarget(name: "ServiceGraphTests", dependencies: ["ServiceGraph"]),
        .testTarget(name: "ServiceGraphTestingTests", dependencies: ["ServiceGraph", "ServiceGraphTesting"]),
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
    target.swiftSettings = settings
}
