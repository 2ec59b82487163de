/// Which synchronous forms of factories with arguments (``ArgumentFactory/Synchronous``) a list of
/// registrations takes away.
///
/// A `provide` or `override` given a synchronous closure registers both forms of its factory, paired
/// (``Registration/isPairedForm``). Any other provider of the asynchronous form makes a function the
/// synchronous form knows nothing of, so it takes the synchronous form away rather than leave two
/// forms that make different things:
/// - an override of the asynchronous form that is not paired (an asynchronous closure, or an override
///   of the function itself) takes it away, unless a later override gives the form again: per form,
///   the last override touching it decides (an override of the synchronous form, paired or not, gives
///   it);
/// - in a child graph, the child's own provider of the asynchronous form that is not paired takes away
///   the form the child inherited from its parent.
struct WithdrawnForms {
    /// Per synchronous form's key: whether the last override touching it takes it away.
    private var lastOverrideWithdraws: [ObjectIdentifier: Bool] = [:]
    /// The keys of inherited synchronous forms the child's own providers take away.
    private var withdrawnInherited: Set<ObjectIdentifier> = []

    /// Whether nothing is taken away (most lists: the plan then asks nothing per registration).
    var isEmpty: Bool { lastOverrideWithdraws.isEmpty && withdrawnInherited.isEmpty }

    /// Reads `registrations` in order; only those of factories with arguments are looked at.
    init(_ registrations: RegistrationList) {
        guard registrations.mayHaveArgumentFactories else { return }
        for index in registrations.indices where registrations[index].argumentFactoryForm != .none {
            let registration = registrations[index]
            switch registration.argumentFactoryForm {
            case .synchronous where registration.isOverride:
                lastOverrideWithdraws[registration.keyID] = false
            case .asynchronous where !registration.isPairedForm:
                // Cold: a dynamic cast per unpaired asynchronous form, for the key of its other form.
                guard let form = (registration.key as? any ArgumentFactoryKey.Type)?.otherForm else { continue }
                if registration.isOverride {
                    lastOverrideWithdraws[ObjectIdentifier(form)] = true
                } else if !registration.isInherited {
                    withdrawnInherited.insert(ObjectIdentifier(form))
                }
            default:
                continue
            }
        }
    }

    /// Whether the provider `registration` (not an override) is a synchronous form taken away.
    func takesAway(_ registration: Registration) -> Bool {
        guard !isEmpty, registration.argumentFactoryForm == .synchronous else { return false }
        return lastOverrideWithdraws[registration.keyID] == true
            || registration.isInherited && withdrawnInherited.contains(registration.keyID)
    }

    /// Whether the override `registration` is of a synchronous form a later override takes away.
    func takesAway(override registration: Registration) -> Bool {
        guard !isEmpty, registration.argumentFactoryForm == .synchronous else { return false }
        return lastOverrideWithdraws[registration.keyID] == true
    }
}

extension GraphPlan {
    /// The slots of the two forms one synchronous closure registered, each mapped to the other's: the
    /// paired synchronous form (``Registration/isPairedSynchronousForm``) whose asynchronous form in
    /// the plan is paired too and was registered at the same site. Validation reports the pair's
    /// problems once, on the asynchronous form; lint counts the pair as one factory.
    static func pairedForms(of providers: RegistrationList, table: KeyTable) -> [Int: Int] {
        guard providers.mayHaveArgumentFactories else { return [:] }
        var pairs: [Int: Int] = [:]
        for slot in providers.indices where providers[slot].isPairedSynchronousForm {
            guard let form = (providers[slot].key as? any ArgumentFactoryKey.Type)?.otherForm,
                let sibling = table.slot(for: ObjectIdentifier(form)),
                providers[sibling].isPairedForm,
                providers[sibling].site.isSame(as: providers[slot].site)
            else { continue }
            pairs[slot] = sibling
            pairs[sibling] = slot
        }
        return pairs
    }

    /// Whether `slot` is a synchronous form whose problems validation reports on its asynchronous form.
    func isReportedWithItsPair(_ slot: Int) -> Bool {
        !pairedForms.isEmpty && pairedForms[slot] != nil && providers[slot].argumentFactoryForm == .synchronous
    }
}
