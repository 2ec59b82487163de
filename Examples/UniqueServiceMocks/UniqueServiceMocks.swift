import ServiceGraph
import Synchronization

// The pattern: in an entity-component system, a "unique" component (one per context, like the
// analytics client) is replaced by a mock in a test's setUp; and a group of observers is notified
// one after another, in the order they were registered.
//
// In ServiceGraph: the unique component is a singleton key; a test's setup copies the app's builder
// and overrides it. The observers are a key whose value is the ordered list of its declared
// dependencies: the order is the declaration, visible in one place and checked by the compiler.

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
enum ReceiptMailerKey: ServiceKey { typealias Value = ReceiptMailer }
enum LoyaltyPointsKey: ServiceKey { typealias Value = LoyaltyPoints }
enum AnalyticsObserverKey: ServiceKey { typealias Value = AnalyticsObserver }
enum OrderObserversKey: ServiceKey { typealias Value = [any OrderObserver] }
enum OrderServiceKey: ServiceKey { typealias Value = OrderService }

func makeShop() -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.provide(AnalyticsKey.self) { ConsoleAnalytics() }
    builder.provide(ReceiptMailerKey.self) { ReceiptMailer() }
    builder.provide(LoyaltyPointsKey.self) { LoyaltyPoints() }
    builder.provide(AnalyticsObserverKey.self, dependsOn: AnalyticsKey.self) { AnalyticsObserver(analytics: $0) }
    // The observers, in the order they are notified.
    builder.provide(
        OrderObserversKey.self,
        dependsOn: ReceiptMailerKey.self,
        AnalyticsObserverKey.self,
        LoyaltyPointsKey.self
    ) { [$0, $1, $2] }
    builder.provide(OrderServiceKey.self, dependsOn: OrderObserversKey.self) { OrderService(observers: $0) }
    builder.declareEntryPoints(OrderServiceKey.self)
    return builder
}
