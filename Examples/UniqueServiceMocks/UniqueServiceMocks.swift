import ServiceGraph
import Synchronization

// The pattern: in an entity-component system, a "unique" component (one per context, like the
// analytics client) is replaced by a mock in a test's setUp; and a group of observers is notified
// one after another, in the order they were registered.
//
// In ServiceGraph: the unique component is a singleton key; a test's setup copies the app's builder
// and overrides it. The observers are an ordered contribution key: each feature contributes its own
// observer, with its own dependencies, and states where it goes (`before`, `after`, `position`) instead
// of depending on the order of the `add` calls; a contradiction is a validation error.

protocol Analytics: Sendable {
    func track(_ event: String)
}

/// The real client (here: prints).
struct ConsoleAnalytics: Analytics {
    func track(_ event: String) { print("analytics: \(event)") }
}

protocol OrderObserver: Sendable {
    func orderPlaced(_ order: Int) -> String
}

struct ReceiptMailer: OrderObserver {
    func orderPlaced(_ order: Int) -> String { "receipt mailed for #\(order)" }
}

struct LoyaltyPoints: OrderObserver {
    func orderPlaced(_ order: Int) -> String { "points added for #\(order)" }
}

/// An observer that uses the unique analytics component.
struct AnalyticsObserver: OrderObserver {
    let analytics: any Analytics

    func orderPlaced(_ order: Int) -> String {
        analytics.track("order \(order)")
        return "tracked #\(order)"
    }
}

/// Places orders and tells every observer, in their declared order.
struct OrderService: Sendable {
    let observers: [any OrderObserver]

    func place(_ order: Int) -> [String] {
        observers.map { $0.orderPlaced(order) }
    }
}

enum AnalyticsKey: ServiceKey { typealias Value = any Analytics }
enum OrderObserversKey: ContributionKey { typealias Element = any OrderObserver }
enum OrderServiceKey: ServiceKey { typealias Value = OrderService }

func makeShop() -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.provide(AnalyticsKey.self) { ConsoleAnalytics() }
    addLoyalty(to: &builder)
    addAnalytics(to: &builder)
    addReceipts(to: &builder)
    builder.provide(OrderServiceKey.self, dependsOn: OrderObserversKey.self) { OrderService(observers: $0) }
    builder.declareEntryPoints(OrderServiceKey.self)
    return builder
}

// Each feature registers its own observer, wherever it is set up; the order is stated, not implied by
// which function runs first.

func addReceipts(to builder: inout ServiceGraph.Builder) {
    // The customer hears first.
    builder.contribute(OrderObserversKey.self, id: "receipts", position: -1) { ReceiptMailer() }
}

func addAnalytics(to builder: inout ServiceGraph.Builder) {
    builder.contribute(OrderObserversKey.self, id: "analytics", dependsOn: AnalyticsKey.self) {
        AnalyticsObserver(analytics: $0)
    }
}

func addLoyalty(to builder: inout ServiceGraph.Builder) {
    // Points are added once the order is tracked.
    builder.contribute(OrderObserversKey.self, id: "loyalty", after: ["analytics"]) { LoyaltyPoints() }
}
