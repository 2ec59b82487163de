import ServiceGraph
import ServiceGraphTestSupport
import Testing

@testable import UniqueServiceMocks

final class MockAnalytics: Analytics {
    private let events = Locked<[String]>([])

    var tracked: [String] { events.withLock { $0 } }
    func track(_ event: String) { events.withLock { $0.append(event) } }
}

/// Each test gets a fresh suite value, so `init` is the setup: the unique analytics component is
/// replaced by a mock before anything is built.
@Suite("Example: a unique service mocked in setup, ordered observers")
struct UniqueServiceMocksTests {
    let shop: ServiceGraph.Builder
    let analytics = MockAnalytics()

    init() {
        var shop = makeShop()
        shop.override(AnalyticsKey.self, with: analytics)
        self.shop = shop
    }

    @Test func observersAreNotifiedInTheirDeclaredOrder() async throws {
        let graph = try await shop.build()
        #expect(graph[OrderServiceKey.self].place(7) == ["receipt mailed for #7", "tracked #7", "points added for #7"])
    }

    @Test func theUniqueServiceIsTheMockFromSetup() async throws {
        let graph = try await shop.build()
        _ = graph[OrderServiceKey.self].place(1)
        _ = graph[OrderServiceKey.self].place(2)
        #expect(analytics.tracked == ["order 1", "order 2"])
    }

    @Test func aTestReplacesOneObserverInItsPlace() async throws {
        var shop = self.shop
        shop.overrideContribution(OrderObserversKey.self, id: "analytics") { LoyaltyPoints() }
        let graph = try await shop.build()
        #expect(
            graph[OrderServiceKey.self].place(3) == [
                "receipt mailed for #3", "points added for #3", "points added for #3",
            ]
        )
        #expect(analytics.tracked.isEmpty)
    }
}
