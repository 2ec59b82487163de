// swift-tools-version: 6.2
import PackageDescription

// The benchmarks are a package of their own so that ServiceGraph itself keeps no dependencies.
let package = Package(
    name: "ServiceGraphBenchmarks",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [
        .package(name: "ServiceGraph", path: ".."),
        .package(url: "https://github.com/Swinject/Swinject", from: "2.10.0"),
        .package(url: "https://github.com/pointfreeco/swift-dependencies", from: "1.17.1"),
    ],
    targets: [
        .executableTarget(
            name: "ContainerBenchmarks",
            dependencies: [
                .product(name: "ServiceGraph", package: "ServiceGraph"),
                .product(name: "Swinject", package: "Swinject"),
                .product(name: "Dependencies", package: "swift-dependencies"),
                "CMallocStats",
            ]
        ),
        .target(name: "CMallocStats"),
        // The code and data lines a request scope's cycle fetches with cold caches (Scripts/cold_scope_cycle.sh).
        .executableTarget(
            name: "ColdScopeCycle",
            dependencies: [.product(name: "ServiceGraph", package: "ServiceGraph"), "ColdScopeCycleServices"]
        ),
        .target(
            name: "ColdScopeCycleServices",
            dependencies: [.product(name: "ServiceGraph", package: "ServiceGraph")]
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where target.name != "CMallocStats" {
    var settings = target.swiftSettings ?? []
    settings.append(contentsOf: [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("InternalImportsByDefault"),
    ])
    target.swiftSettings = settings
}
