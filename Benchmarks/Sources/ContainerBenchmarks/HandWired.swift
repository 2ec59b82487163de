/// The physical limit: plain initializers, singletons in `let`s.
final class HandWired: Sendable {
    let logger: any Logging = Logger()
    let clock = Clock()
    let store = Store()

    func handler() -> Handler {
        Handler(logger: logger, clock: clock, store: store)
    }

    func chain() -> Link {
        Link(
            previous: Link(
                previous: Link(
                    previous: Link(
                        previous: Link(
                            previous: Link(
                                previous: Link(previous: Link(previous: Link(previous: Link(store: store))))
                            )
                        )
                    )
                )
            )
        )
    }

    /// A request's scope: its session is created on first use and then reused.
    final class RequestScope {
        let root: HandWired
        private var cached: Session?

        init(root: HandWired) {
            self.root = root
        }

        var session: Session {
            if let cached { return cached }
            let session = Session(logger: root.logger)
            cached = session
            return session
        }
    }

    /// A generated graph's nodes. Releases them newest first: dropping the array front to back would
    /// free a 100,000-deep chain recursively and overflow the stack.
    final class Graph {
        var nodes: [GraphNode] = []

        deinit {
            while nodes.popLast() != nil {}
        }
    }

    /// Builds a generated graph of `count` nodes.
    static func buildGraph(count: Int) -> Graph {
        let graph = Graph()
        graph.nodes.reserveCapacity(count)
        for index in 0..<count {
            graph.nodes.append(GraphNode(generatedDependencies(of: index).map { graph.nodes[$0] }))
        }
        return graph
    }
}
