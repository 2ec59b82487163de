import ServiceGraph
import Synchronization

// The pattern: an entity/component registry. A feature-flag component is registered, fetched by type
// from anywhere, told `didAddToEntity` when it joins and `willRemoveFromEntity` when it leaves.
//
// In ServiceGraph: the component is a service behind a typed key; `didAdd` runs once it and what it
// needs are in place, `willRemove` before it goes, after everything that uses it is gone; the
// "entity" is the graph (or a scope of it), and removing it releases its components in reverse order.
// Components join and leave a running registry through a `LiveGraph`: an update adds or removes one,
// and only it is made or released; the others stay the same instances.

/// Where flags persist between runs (a file or a remote config service in a real app).
final class FlagStore: Sendable {
    private let saved = Mutex<[String: Bool]>(["new-checkout": false, "dark-mode": true])
    let events = EventList()

    func load() -> [String: Bool] { saved.withLock { $0 } }
    func save(_ flags: [String: Bool]) { saved.withLock { $0 = flags } }
}

/// The component: feature flags, loaded when added, saved when removed.
final class FeatureFlags: LifecycleHooks {
    private let store: FlagStore
    private let flags = Mutex<[String: Bool]>([:])

    init(store: FlagStore) {
        self.store = store
    }

    func isEnabled(_ flag: String) -> Bool { flags.withLock { $0[flag] ?? false } }
    func set(_ flag: String, _ enabled: Bool) { flags.withLock { $0[flag] = enabled } }

    func didAdd() async throws {
        let loaded = store.load()
        flags.withLock { $0 = loaded }
        store.events.append("FeatureFlags added with \(loaded.count) flags")
    }

    func willRemove() async throws {
        store.save(flags.withLock { $0 })
        store.events.append("FeatureFlags removed, flags saved")
    }
}

/// A component that uses the flags; it is removed before the flags it depends on.
final class Checkout: LifecycleHooks {
    let flags: FeatureFlags
    let events: EventList

    init(flags: FeatureFlags, events: EventList) {
        self.flags = flags
        self.events = events
    }

    var flow: String { flags.isEnabled("new-checkout") ? "new checkout" : "classic checkout" }

    func didAdd() async throws { events.append("Checkout added (\(flow))") }
    func willRemove() async throws { events.append("Checkout removed") }
}

/// A component added at run time, and removed again: it reads the flags the registry already has.
final class Recommendations: LifecycleHooks {
    let flags: FeatureFlags
    let events: EventList

    init(flags: FeatureFlags, events: EventList) {
        self.flags = flags
        self.events = events
    }

    var headline: String { flags.isEnabled("dark-mode") ? "picks for you (dark)" : "picks for you" }

    func didAdd() async throws { events.append("Recommendations added") }
    func willRemove() async throws { events.append("Recommendations removed") }
}

enum FlagStoreKey: ServiceKey { typealias Value = FlagStore }
enum RecommendationsKey: ServiceKey { typealias Value = Recommendations }
enum FeatureFlagsKey: ServiceKey { typealias Value = FeatureFlags }
enum CheckoutKey: ServiceKey { typealias Value = Checkout }

/// The registry: which components exist and what each needs.
func makeRegistry(store: FlagStore) -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.provide(FlagStoreKey.self) { store }
    builder.provide(FeatureFlagsKey.self, dependsOn: FlagStoreKey.self) { FeatureFlags(store: $0) }
    builder.provide(CheckoutKey.self, dependsOn: FeatureFlagsKey.self, FlagStoreKey.self) {
        Checkout(flags: $0, events: $1.events)
    }
    builder.declareEntryPoints(CheckoutKey.self)
    return builder
}

/// Adds the recommendations component to a registry's builder (a change set for `LiveGraph.update`).
func addRecommendations(to builder: inout ServiceGraph.Builder) {
    builder.provide(RecommendationsKey.self, dependsOn: FeatureFlagsKey.self, FlagStoreKey.self) {
        Recommendations(flags: $0, events: $1.events)
    }
}

/// An ordered, thread-safe list of what happened.
final class EventList: Sendable {
    private let entries = Mutex<[String]>([])

    func append(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}
