//! API Priority and Fairness configurations the server tests apply.

/// A priority level with one seat that rejects what does not fit (`tiny`: one share,
/// nothing lent or borrowed, `Reject`), and the flow schema that sends every request of the
/// data directory's plain user (`apfkit-user`) there (`plain-users`, precedence 100).
pub const ONE_SEAT_FOR_THE_PLAIN_USER: &str = "\
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: tiny}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: plain-users}
spec:
  priorityLevelConfiguration: {name: tiny}
  matchingPrecedence: 100
  rules:
  - subjects: [{kind: User, user: {name: apfkit-user}}]
    resourceRules: [{verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*']}]
";
