import ServiceGraph

let store = FlagStore()
let registry = try await makeRegistry(store: store).build()
print("checkout uses the \(registry[CheckoutKey.self].flow)")
registry[FeatureFlagsKey.self].set("new-checkout", true)
try await registry.shutdown()
for event in store.events.all {
    print("  \(event)")
}
print("saved: new-checkout = \(store.load()["new-checkout"] ?? false)")
