import ServiceGraph

print(makeMainBuilder().dump(.text))
let main = try await makeMainGraph()
let acme = try await makeTenantGraph(of: main, tenant: "acme")
let acmeFrance = try await makeRegionGraph(of: acme, language: "fr")

for (name, graph) in [("main", main), ("acme", acme), ("acme/fr", acmeFrance)] {
    print("\(name): \(try await graph.resolve(WelcomeBannerKey.self).render(for: "Ada"))")
}
print("acme/fr bills to \(acmeFrance[TenantBillingKey.self].database) for \(acmeFrance[TenantBillingKey.self].tenant)")
