extension ServiceGraph.Builder {
    /// Declares services that are used from outside the graph (resolved by the application, not
    /// depended on by another service), so that ``lint()`` does not report them as unused.
    public mutating func declareEntryPoints<each Key: ServiceKey>(_ keys: repeat (each Key).Type) {
        for key in repeat each keys {
            entryPoints.insert(ObjectIdentifier(key))
        }
    }

    /// Warnings about the graph that do not stop it from building: providers that nothing depends
    /// on and that are not declared entry points (dead wiring, or a forgotten
    /// ``declareEntryPoints(_:)``), then optional dependencies on keys nothing provides (the factory
    /// gets nil). Runs no factory.
    ///
    /// - Complexity: O(services + edges).
    public func lint() -> [LintWarning] {
        let checked = checkedPlan
        let plan = checked.plan
        let validator = GraphValidator(plan)
        // An entry point names either form of a factory with arguments, and covers both.
        func isEntryPoint(_ slot: Int) -> Bool {
            entryPoints.contains(plan.providers[slot].keyID)
                || plan.pairedForms[slot].map { entryPoints.contains(plan.providers[$0].keyID) } == true
        }
        return checked.findings.unusedProviders
            .filter { !isEntryPoint($0) }
            .map(validator.unusedProviderWarning)
            + plan.absentOptionals.filter { !plan.isReportedWithItsPair($0.slot) }.map(validator.absentOptionalWarning)
    }
}
