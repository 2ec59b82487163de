import ServiceGraph
import Testing

@testable import ChildGraphs

@Suite("Example: child graphs searched first, in order")
struct ChildGraphsTests {
    @Test func eachGraphSearchesItselfThenItsParents() async throws {
        let main = try await makeMainGraph()
        let acme = try await makeTenantGraph(of: main, tenant: "acme")
        let acmeFrance = try await makeRegionGraph(of: acme, language: "fr")
        #expect(try await main.resolve(WelcomeBannerKey.self).render(for: "Ada") == "[light] Welcome, Ada")
        #expect(try await acme.resolve(WelcomeBannerKey.self).render(for: "Ada") == "[acme brand] Welcome, Ada")
        #expect(try await acmeFrance.resolve(WelcomeBannerKey.self).render(for: "Ada") == "[acme brand] Bienvenue, Ada")
    }

    @Test func aChildsServicesDependOnTheParentsAndNeverTheReverse() async throws {
        let main = try await makeMainGraph()
        let acme = try await makeTenantGraph(of: main, tenant: "acme")
        #expect(acme[TenantBillingKey.self].database == "postgres://main")
        #expect(acme[DatabaseKey.self] == main[DatabaseKey.self])
        await #expect(throws: ServiceGraphError.self) { try await main.resolve(TenantBillingKey.self) }
    }

    @Test func siblingChildrenDoNotSeeEachOther() async throws {
        let main = try await makeMainGraph()
        let acme = try await makeTenantGraph(of: main, tenant: "acme")
        let globex = try await makeTenantGraph(of: main, tenant: "globex")
        #expect(acme[ThemeKey.self] == Theme(name: "acme brand"))
        #expect(globex[ThemeKey.self] == Theme(name: "globex brand"))
        #expect(main[ThemeKey.self] == Theme(name: "light"))
    }

    @Test func theMainGraphsModulesEachProvideTheirOwnKeys() throws {
        struct BrandingModule: GraphModule {
            func register(in builder: inout ServiceGraph.Builder) {
                builder.provide(ThemeKey.self) { Theme(name: "brand") }
            }
        }
        var builder = makeMainBuilder()
        builder.include(AppearanceModule())  // already included: nothing changes
        try builder.validate()
        builder.include(BrandingModule())
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.duplicateProvider])
        #expect(error.problems[0].message.contains("module AppearanceModule"))
        #expect(error.problems[0].message.contains("module ChildGraphsTests.BrandingModule"))
    }
}
