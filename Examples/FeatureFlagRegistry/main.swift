import ServiceGraph

let store = FlagStore()
let registry = try await LiveGraph(makeRegistry(store: store))
print("checkout uses the \(registry.current[CheckoutKey.self].flow)")
registry.current[FeatureFlagsKey.self].set("new-checkout", true)

// A component joins the running registry: only it is made; the flags and the checkout stay the same.
let added = try await registry.update(addRecommendations)
print("added \(added.rebuilt.joined(separator: ", ")); kept \(added.shared.joined(separator: ", "))")
print("recommendations: \(registry.current[RecommendationsKey.self].headline)")

// And leaves: its willRemove runs once the generation that had it is no longer used.
try await registry.update { $0.remove(RecommendationsKey.self) }
try await registry.shutdown()
for event in store.events.all {
    print("  \(event)")
}
print("saved: new-checkout = \(store.load()["new-checkout"] ?? false)")
