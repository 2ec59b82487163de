extension NaiveLocator {
    /// The locator of the resolve rows' shapes (see `Shapes.swift`).
    static func make() -> NaiveLocator {
        let locator = NaiveLocator()
        locator.register((any Logging).self, instance: Logger())
        locator.register(Clock.self, instance: Clock())
        locator.register(Store.self, instance: Store())
        locator.register(Handler.self) { Handler(logger: $0.resolve(), clock: $0.resolve(), store: $0.resolve()) }
        return locator
    }
}
