import ServiceGraph
import Testing

@testable import FeatureFlagRegistry

@Suite("Example: feature flags in a component registry")
struct FeatureFlagRegistryTests {
    @Test func flagsAreLoadedWhenAddedAndSavedWhenRemovedInReverseOrder() async throws {
        let store = FlagStore()
        let registry = try await makeRegistry(store: store).build()
        #expect(registry[CheckoutKey.self].flow == "classic checkout")
        registry[FeatureFlagsKey.self].set("new-checkout", true)
        try await registry.shutdown()
        #expect(
            store.events.all == [
                "FeatureFlags added with 2 flags",
                "Checkout added (classic checkout)",
                "Checkout removed",
                "FeatureFlags removed, flags saved",
            ]
        )
        #expect(store.load()["new-checkout"] == true)
    }

    @Test func theNextRegistrySeesWhatTheLastOneSaved() async throws {
        let store = FlagStore()
        store.save(["new-checkout": true])
        let registry = try await makeRegistry(store: store).build()
        #expect(registry[CheckoutKey.self].flow == "new checkout")
        try await registry.shutdown()
    }

    @Test func aComponentJoinsAndLeavesTheRunningRegistryWithItsHooks() async throws {
        let store = FlagStore()
        let registry = try await LiveGraph(makeRegistry(store: store))
        let flags = registry.current[FeatureFlagsKey.self]
        let added = try await registry.update(addRecommendations)
        #expect(added.rebuilt == ["RecommendationsKey"])
        #expect(Set(added.shared) == ["FlagStoreKey", "FeatureFlagsKey", "CheckoutKey"])
        // The component reads the flags the registry already had: the same instance.
        #expect(registry.current[RecommendationsKey.self].flags === flags)
        let removed = try await registry.update { $0.remove(RecommendationsKey.self) }
        #expect(removed.removed == ["RecommendationsKey"])
        #expect(throws: ServiceGraphError.self) { try registry.current.resolveSynchronously(RecommendationsKey.self) }
        try await registry.shutdown()
        #expect(
            store.events.all == [
                "FeatureFlags added with 2 flags",
                "Checkout added (classic checkout)",
                "Recommendations added",
                "Recommendations removed",
                "Checkout removed",
                "FeatureFlags removed, flags saved",
            ]
        )
    }
}
