import ServiceGraph

// The pattern: resolver containers. A main (root) container, a mock container searched before it,
// and child containers searched in order, each falling back to the next; usually by swapping a
// global root.
//
// In ServiceGraph: a child graph is built from its parent (`makeChildBuilder()`). It is searched
// first: what it provides replaces the parent's for everything built in the child, while the parent
// is untouched. A child of a child searches itself, then its parent, then the root. No global root
// to swap: each graph is a value. Containers that each hold one part of the registrations become
// modules (`GraphModule`) included into one graph: each key comes from one module (two would be a
// duplicate naming both), and dumps group the services by module.

struct Theme: Sendable, Equatable {
    let name: String
}

struct Localizer: Sendable {
    let language: String

    func welcome(_ name: String) -> String {
        switch language {
        case "fr": "Bienvenue, \(name)"
        case "de": "Willkommen, \(name)"
        default: "Welcome, \(name)"
        }
    }
}

/// Built in whichever graph resolves it, from that graph's theme and localizer.
struct WelcomeBanner: Sendable {
    let theme: Theme
    let localizer: Localizer

    func render(for name: String) -> String { "[\(theme.name)] \(localizer.welcome(name))" }
}

/// A service only a tenant has; it depends on the main graph's database.
struct TenantBilling: Sendable {
    let database: String
    let tenant: String
}

enum ThemeKey: ServiceKey { typealias Value = Theme }
enum LocalizerKey: ServiceKey { typealias Value = Localizer }
enum DatabaseKey: ServiceKey { typealias Value = String }
enum WelcomeBannerKey: ServiceKey { typealias Value = WelcomeBanner }
enum TenantBillingKey: ServiceKey { typealias Value = TenantBilling }

/// The look of the app: theme, language and the banner made from them.
struct AppearanceModule: GraphModule {
    func register(in builder: inout ServiceGraph.Builder) {
        builder.provide(ThemeKey.self) { Theme(name: "light") }
        builder.provide(LocalizerKey.self) { Localizer(language: "en") }
        builder.provide(WelcomeBannerKey.self, lifetime: .transient, dependsOn: ThemeKey.self, LocalizerKey.self) {
            WelcomeBanner(theme: $0, localizer: $1)
        }
    }
}

/// Where data lives.
struct StorageModule: GraphModule {
    func register(in builder: inout ServiceGraph.Builder) {
        builder.provide(DatabaseKey.self) { "postgres://main" }
    }
}

/// The main graph, assembled from its modules.
func makeMainBuilder() -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.include(AppearanceModule())
    builder.include(StorageModule())
    return builder
}

/// The main graph.
func makeMainGraph() async throws -> ServiceGraph {
    try await makeMainBuilder().build()
}

/// A tenant's graph: searched before the main graph, with its own theme and billing.
func makeTenantGraph(of main: ServiceGraph, tenant: String) async throws -> ServiceGraph {
    var builder = main.makeChildBuilder()
    builder.provide(ThemeKey.self) { Theme(name: "\(tenant) brand") }
    builder.provide(TenantBillingKey.self, dependsOn: DatabaseKey.self) { TenantBilling(database: $0, tenant: tenant) }
    return try await builder.build()
}

/// A region's graph under a tenant: searched first, then the tenant's, then the main graph.
func makeRegionGraph(of tenant: ServiceGraph, language: String) async throws -> ServiceGraph {
    var builder = tenant.makeChildBuilder()
    builder.provide(LocalizerKey.self) { Localizer(language: language) }
    return try await builder.build()
}
