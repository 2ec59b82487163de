import Swinject

/// Swinject 2.10, wired the documented way: singletons in `.container` scope, transients in
/// `.transient`, the chain by name, a request as a child container.
enum SwinjectContender {
    static func make() -> Container {
        let container = Container()
        container.register((any Logging).self) { _ in Logger() }.inObjectScope(.container)
        container.register(Clock.self) { _ in Clock() }.inObjectScope(.container)
        container.register(Store.self) { _ in Store() }.inObjectScope(.container)
        container.register(Handler.self) { resolver in
            Handler(
                logger: resolver.resolve((any Logging).self)!,
                clock: resolver.resolve(Clock.self)!,
                store: resolver.resolve(Store.self)!
            )
        }.inObjectScope(.transient)
        container.register(Link.self, name: "link0") { resolver in
            Link(store: resolver.resolve(Store.self)!)
        }.inObjectScope(.transient)
        for index in 1..<10 {
            container.register(Link.self, name: "link\(index)") { resolver in
                Link(previous: resolver.resolve(Link.self, name: "link\(index - 1)")!)
            }.inObjectScope(.transient)
        }
        return container
    }

    static func requestScope(of parent: Container) -> Container {
        let child = Container(parent: parent)
        child.register(Session.self) { resolver in
            Session(logger: resolver.resolve((any Logging).self)!)
        }.inObjectScope(.container)
        return child
    }

    /// Registers a generated graph of `count` nodes by name and resolves every one (Swinject has no
    /// validation or eager build, so resolving everything is its equivalent).
    static func buildGraph(count: Int) -> Container {
        let container = Container()
        for index in 0..<count {
            let dependencies = generatedDependencies(of: index).map { "n\($0)" }
            container.register(GraphNode.self, name: "n\(index)") { resolver in
                GraphNode(dependencies.map { resolver.resolve(GraphNode.self, name: $0)! })
            }.inObjectScope(.container)
        }
        for index in 0..<count {
            blackHole(container.resolve(GraphNode.self, name: "n\(index)"))
        }
        return container
    }
}

/// Lets a Swinject resolver cross threads in the two-thread scenario (only the synchronized one).
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
}
