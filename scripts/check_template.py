#!/usr/bin/env python3
"""What infra/template.yaml must keep for failed events (docs/operations.md, "Failed events:
dead-letter queues and redrive"), checked on the template itself. cfn-lint cannot tell that a
retry policy went missing; this can.

- Every Schedule / ScheduleV2 / EventBridgeRule event of every function has a RetryPolicy and a
  DeadLetterConfig naming a queue the template declares (`Arn: !GetAtt <Queue>.Arn`), and that
  queue's policy lets EventBridge send to it from that rule alone (aws:SourceArn).
- Every function with such an event, or another asynchronous one (SNS, S3, CloudWatchLogs,
  IoTRule), has an EventInvokeConfig whose OnFailure destination is a declared SQS queue.
- Every SQS event source (a function's SQS event or an AWS::Lambda::EventSourceMapping) polls a declared queue whose RedrivePolicy has a maxReceiveCount (its
  retries) and sends to a declared dead-letter queue (alarmed as below; the polled queue itself
  is not alarmed at one message).
- Every DynamoDB stream event (the announce function's: docs/events.md) reads the stream of a
  declared table that keeps new and old images, from TRIM_HORIZON, reports a batch's first
  failure (ReportBatchItemFailures) and bisects a failing batch, bounds its retries and the age
  of a record within the stream's 24 hours, sends what it gives up on to a declared queue
  (alarmed as below), and its function has an AWS/Lambda IteratorAge alarm naming it. Any
  other kind of event source than these and the HTTP API's is a failure until this check says
  what keeps its failed events.
- Every queue the template declares is encrypted, keeps messages 14 days, and (unless an SQS
  event source polls it) has an alarm on ApproximateNumberOfMessagesVisible whose QueueName
  dimension is that queue's name.
- The Offboarding rule matches only `source: !Ref OffboardingSources`, and the delete function
  gets the same list as SNAPWAKE_OFFBOARDING_SOURCES (`!Join [",", !Ref OffboardingSources]`).
- The delete function's Sweep and Refresh schedules exist with their inputs; the Sweep fires at
  least once per function timeout, with `every_min` no shorter than its period.
- Every function has an AWS/Lambda Errors and a Throttles alarm whose FunctionName dimension
  names it (an alarm without it watches the whole account's functions), and no alarm on a
  metric snapwake publishes lacks dimensions (CloudWatch matches the exact set; which sets the
  code publishes is checked by tests/tests/metrics.rs against this template).
- Operators can find what the stack made: an Output whose Value is `!Ref <it>` for every
  function, queue and table.
- Nothing a new account's quota refuses: a function's ReservedConcurrentExecutions, if any, is
  `!If [<condition>, !Ref <parameter>, !Ref AWS::NoValue]` with a Number parameter defaulting to
  0 (a new account's concurrency quota is 10 and Lambda keeps 10 unreserved: any hard-coded
  reserve fails the stack's creation there).
- Least privilege, the half a template shows: each function's role, as SAM translates the
  template (its Policies, policy templates and managed policies included, what SAM adds itself,
  any IAM policy resource naming the role), allows exactly the statements the function's own
  Policies write, plus what SAM adds for Lambda's own use of the role (the function's logs, a
  DynamoDB stream event's reads, an on-failure queue), plus X-Ray with Tracing=Active: nothing
  beyond, nothing missing. X-Ray is never in a function's own Policies, and the list function
  writes only under its LeadingKeys condition. The other half, that those statements are
  exactly what the code calls, is proven from the calls the test suites record
  (tests/tests/iam.rs; docs/security.md, "What each function may do, proven by its calls").
- Tracing: the Tracing parameter (Disabled or Active, default Disabled) is every function's
  Tracing (Globals), and no function sets its own.

Usage: check_template.py [--self-test] [TEMPLATE]. Exits 1 on any failure, naming each one.
`--self-test` breaks an in-memory copy of the template in each of the ways above and fails
unless every break is caught (and the template as it is passes). Python 3, PyYAML and, for the
IAM check, aws-sam-translator; scripts/lint-infra.sh runs both with its virtualenv, and loads and
translates the template with `load_template` and `translate` from here.
"""
import copy
import json
import re
import sys

import yaml

TEMPLATE = "infra/template.yaml"
DELETE_FUNCTION = "DeleteFunction"
OFFBOARDING_EVENT = "Offboarding"
SOURCES_PARAMETER = "OffboardingSources"
SOURCES_VARIABLE = "SNAPWAKE_OFFBOARDING_SOURCES"
RULE_EVENTS = ("Schedule", "ScheduleV2", "EventBridgeRule")
# Other sources that invoke a function asynchronously: Lambda's own retries, then its on-failure
# destination, are all that keeps a failed event.
ASYNC_EVENTS = ("SNS", "S3", "CloudWatchLogs", "IoTRule")
# Sources whose caller sees a failure and retries itself (the HTTP API answers 5xx).
SYNC_EVENTS = ("HttpApi", "Api")
# A table's stream read by an event source mapping: its own retries, bisection, partial batch
# failures and on-failure destination keep a failed record (stream_event_failures).
STREAM_EVENTS = ("DynamoDB",)
# How long a DynamoDB stream keeps a record.
STREAM_RETENTION = 24 * 3600
FOURTEEN_DAYS = 14 * 24 * 3600
# The delete function's schedules and the action each one's input must name.
SCHEDULES = {"Sweep": "sweep", "Refresh": "refresh"}
QUEUE_METRIC = "ApproximateNumberOfMessagesVisible"


class Loader(yaml.SafeLoader):
    pass


def _tag(loader, suffix, node):
    # CloudFormation short forms (!Ref, !Sub, !GetAtt ...) as their long forms.
    name = "Ref" if suffix == "Ref" else "Fn::" + suffix
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return {name: value}


Loader.add_multi_constructor("!", _tag)


def load_template(path=TEMPLATE):
    with open(path) as f:
        return yaml.load(f, Loader=Loader)


# ---------------------------------------------------------------------------------------------
# Reading the template.


def resources(template, kind):
    return {
        name: r for name, r in (template.get("Resources") or {}).items()
        if isinstance(r, dict) and r.get("Type") == kind
    }


def props(resource):
    return resource.get("Properties") or {}


def getatt(value, attribute):
    """X when value is `!GetAtt X.<attribute>`, else None."""
    if isinstance(value, dict) and list(value) == ["Fn::GetAtt"]:
        target = value["Fn::GetAtt"]
        if isinstance(target, list) and len(target) == 2 and target[1] == attribute:
            return target[0]
    return None


def function_property(template, function, name):
    """A function's property, or the Globals' when the function does not set it."""
    own = props(function).get(name)
    if own is not None:
        return own
    return ((template.get("Globals") or {}).get("Function") or {}).get(name)


def events_of(function, kinds):
    for name, event in (props(function).get("Events") or {}).items():
        if isinstance(event, dict) and event.get("Type") in kinds:
            yield name, event


def rule_events(function):
    for name, event in (props(function).get("Events") or {}).items():
        if isinstance(event, dict) and event.get("Type") in RULE_EVENTS:
            yield name, event


def statements(policy):
    document = props(policy).get("PolicyDocument") or {}
    found = document.get("Statement") or []
    return found if isinstance(found, list) else [found]


def lets_rule_send(policy, queue, rule):
    """Does this queue policy let EventBridge send to `queue` from `rule` (a logical id)?"""
    queues = [q.get("Ref") for q in props(policy).get("Queues") or [] if isinstance(q, dict)]
    if queue not in queues:
        return False
    for s in statements(policy):
        principal = (s.get("Principal") or {}).get("Service")
        principals = principal if isinstance(principal, list) else [principal]
        actions = s.get("Action")
        actions = actions if isinstance(actions, list) else [actions]
        condition = s.get("Condition") or {}
        source_arns = [
            c.get("aws:SourceArn") for c in condition.values() if isinstance(c, dict)
        ]
        if (
            s.get("Effect") == "Allow"
            and "events.amazonaws.com" in principals
            and ("sqs:SendMessage" in actions or "sqs:*" in actions)
            and any(getatt(arn, "Arn") == rule for arn in source_arns)
        ):
            return True
    return False


def queue_alarms(template, queue):
    out = []
    for name, alarm in resources(template, "AWS::CloudWatch::Alarm").items():
        p = props(alarm)
        if (p.get("Namespace"), p.get("MetricName")) != ("AWS/SQS", QUEUE_METRIC):
            continue
        dims = [d for d in p.get("Dimensions") or [] if isinstance(d, dict)]
        if any(
            d.get("Name") == "QueueName" and getatt(d.get("Value"), "QueueName") == queue
            for d in dims
        ):
            out.append((name, p))
    return out


# ---------------------------------------------------------------------------------------------
# The checks: each failure is one sentence naming what is wrong and where.


def check(template):
    failures = []
    fail = failures.append
    delete_events = f"{DELETE_FUNCTION}.Events"
    queues = resources(template, "AWS::SQS::Queue")
    policies = resources(template, "AWS::SQS::QueuePolicy")
    functions = resources(template, "AWS::Serverless::Function")

    for fname, function in functions.items():
        events = list(rule_events(function))
        for ename, event in events:
            where = f"{fname}.Events.{ename} ({event['Type']})"
            p = props(event)
            retry = p.get("RetryPolicy")
            if not isinstance(retry, dict) or not all(
                isinstance(retry.get(k), int)
                for k in ("MaximumRetryAttempts", "MaximumEventAgeInSeconds")
            ):
                fail(
                    f"{where}: no RetryPolicy with MaximumRetryAttempts and "
                    "MaximumEventAgeInSeconds"
                )
            dlc = p.get("DeadLetterConfig")
            if not isinstance(dlc, dict):
                fail(f"{where}: no DeadLetterConfig")
                continue
            queue = getatt(dlc.get("Arn"), "Arn")
            if queue not in queues:
                fail(
                    f"{where}: DeadLetterConfig must be `Arn: !GetAtt <Queue>.Arn` of an "
                    f"AWS::SQS::Queue this template declares (so it is alarmed), not {dlc!r}"
                )
                continue
            # SAM names the rule <Function><Event>; a Scheduler schedule's DLQ is sent to by the
            # schedule's role, which SAM writes itself.
            if event["Type"] != "ScheduleV2" and not any(
                lets_rule_send(policy, queue, fname + ename) for policy in policies.values()
            ):
                fail(
                    f"{where}: no AWS::SQS::QueuePolicy lets events.amazonaws.com sqs:SendMessage "
                    f"to {queue} with aws:SourceArn !GetAtt {fname}{ename}.Arn"
                )

        invoked = events + list(events_of(function, ASYNC_EVENTS))
        if invoked:
            config = function_property(template, function, "EventInvokeConfig")
            on_failure = (((config or {}).get("DestinationConfig") or {}).get("OnFailure")) or {}
            if not isinstance(config, dict):
                names = ", ".join(e for e, _ in invoked)
                fail(f"{fname}: has {names} events but no EventInvokeConfig")
            elif not isinstance(config.get("MaximumRetryAttempts"), int):
                fail(f"{fname}: EventInvokeConfig has no MaximumRetryAttempts")
            if isinstance(config, dict) and (
                on_failure.get("Type") != "SQS"
                or getatt(on_failure.get("Destination"), "Arn") not in queues
            ):
                fail(
                    f"{fname}: EventInvokeConfig.DestinationConfig.OnFailure must be Type SQS with "
                    f"Destination !GetAtt <Queue>.Arn of a declared queue, not {on_failure!r}"
                )

    sources = polled_queues(template, functions)
    failures.extend(event_source_failures(functions, queues, sources))
    failures.extend(stream_event_failures(template, functions, queues))
    for qname, queue in queues.items():
        p = props(queue)
        if p.get("SqsManagedSseEnabled") is not True and not p.get("KmsMasterKeyId"):
            fail(f"{qname}: not encrypted (SqsManagedSseEnabled: true)")
        if p.get("MessageRetentionPeriod") != FOURTEEN_DAYS:
            fail(f"{qname}: MessageRetentionPeriod is not {FOURTEEN_DAYS} (14 days)")
        if qname in sources:
            continue  # a work queue: its dead-letter queue is the one alarmed
        alarms = queue_alarms(template, qname)
        if not alarms:
            fail(
                f"{qname}: no AWS::CloudWatch::Alarm on AWS/SQS {QUEUE_METRIC} "
                f"with dimension QueueName !GetAtt {qname}.QueueName"
            )
        for aname, a in alarms:
            if (
                a.get("Threshold") != 0
                or a.get("ComparisonOperator") != "GreaterThanThreshold"
                or a.get("Statistic") != "Maximum"
            ):
                fail(f"{aname}: must fire on Maximum > 0 (one message waiting in {qname})")
            if not a.get("AlarmActions"):
                fail(f"{aname}: no AlarmActions (the HasAlarmTopic topic, as the other alarms)")

    delete = functions.get(DELETE_FUNCTION)
    if delete is None:
        fail(f"no {DELETE_FUNCTION} (AWS::Serverless::Function)")
        return failures
    events = props(delete).get("Events") or {}

    parameter = (template.get("Parameters") or {}).get(SOURCES_PARAMETER)
    if not isinstance(parameter, dict) or parameter.get("Type") != "CommaDelimitedList":
        fail(f"no CommaDelimitedList parameter {SOURCES_PARAMETER}")
    offboarding = events.get(OFFBOARDING_EVENT) or {}
    if offboarding.get("Type") != "EventBridgeRule":
        fail(f"{delete_events}.{OFFBOARDING_EVENT}: no EventBridgeRule event")
    else:
        pattern = props(offboarding).get("Pattern") or {}
        if pattern.get("source") != {"Ref": SOURCES_PARAMETER}:
            fail(
                f"{delete_events}.{OFFBOARDING_EVENT}: Pattern.source must be "
                f"!Ref {SOURCES_PARAMETER} (any other source is refused), "
                f"not {pattern.get('source')!r}"
            )
        if pattern.get("detail-type") != ["snapwake.owner.offboarded"]:
            fail(
                f"{delete_events}.{OFFBOARDING_EVENT}: Pattern.detail-type is not "
                "[snapwake.owner.offboarded]"
            )
    own = ((props(delete).get("Environment") or {}).get("Variables")) or {}
    value = own.get(SOURCES_VARIABLE)
    if value is None:
        shared = function_property(template, {}, "Environment") or {}
        value = (shared.get("Variables") or {}).get(SOURCES_VARIABLE)
    if value != {"Fn::Join": [",", {"Ref": SOURCES_PARAMETER}]}:
        fail(
            f"{DELETE_FUNCTION}: environment {SOURCES_VARIABLE} must be "
            f"!Join [\",\", !Ref {SOURCES_PARAMETER}], not {value!r}"
        )

    for ename, action in SCHEDULES.items():
        event = events.get(ename) or {}
        if event.get("Type") not in ("Schedule", "ScheduleV2"):
            fail(f"{delete_events}.{ename}: no Schedule event")
            continue
        try:
            got = json.loads(props(event).get("Input") or "null")
        except ValueError:
            got = None
        if not isinstance(got, dict) or got.get("action") != action:
            fail(
                f"{delete_events}.{ename}: Input must be {{\"action\": \"{action}\"}}, "
                f"not {props(event).get('Input')!r}"
            )
    failures.extend(sweep_cadence_failures(props(delete), events.get("Sweep") or {}))
    failures.extend(quota_failures(template, functions))
    failures.extend(alarm_failures(template, functions))
    failures.extend(output_failures(template))
    failures.extend(tracing_failures(template, functions))
    failures.extend(iam_failures(template, functions))
    return failures


def rate_seconds(expression):
    """The period of `rate(N unit)` in seconds, or None."""
    m = re.fullmatch(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)", expression or "")
    if not m:
        return None
    return int(m.group(1)) * {"minute": 60, "hour": 3600, "day": 86400}[m.group(2).rstrip("s")]


def sweep_cadence_failures(delete_props, sweep_event):
    """A pass longer than one invocation goes on at the next run: the Sweep schedule fires at
    least once per function timeout, and its `every_min` (how often a pass begins) is no
    shorter than that period (docs/operations.md, "At a million snapshots")."""
    out = []
    event_props = sweep_event.get("Properties") or {}
    period = rate_seconds(event_props.get("Schedule"))
    timeout = delete_props.get("Timeout")
    try:
        every = json.loads(event_props.get("Input") or "null").get("every_min")
    except (ValueError, AttributeError):
        every = None
    if period is None:
        out.append(f"{DELETE_FUNCTION}.Events.Sweep: Schedule must be rate(N minutes|hours)")
        return out
    if isinstance(timeout, int) and period > max(timeout, 900):
        out.append(
            f"{DELETE_FUNCTION}.Events.Sweep: fires every {period} s, longer than an invocation "
            f"({timeout} s): a pass that outlasts one would wait that long to go on"
        )
    if not isinstance(every, int) or every * 60 < period:
        out.append(
            f"{DELETE_FUNCTION}.Events.Sweep: Input needs every_min (minutes between passes) "
            f"of at least the schedule's period, not {every!r}"
        )
    return out


def polled_queues(template, functions):
    """The declared queues an SQS event source polls (by logical id): a function's SQS event,
    or an AWS::Lambda::EventSourceMapping (which lets the role's own grant name the queue,
    where SAM's SQS event attaches a managed policy allowing every queue)."""
    mapped = {
        getatt(props(mapping).get("EventSourceArn"), "Arn")
        for mapping in resources(template, "AWS::Lambda::EventSourceMapping").values()
    }
    return ({
        getatt(props(event).get("Queue"), "Arn")
        for function in functions.values()
        for _, event in events_of(function, ("SQS",))
    } | mapped) - {None}


def event_source_failures(functions, queues, sources):
    """Event sources whose failed events nothing keeps (see the module's docs)."""
    found = []
    known = RULE_EVENTS + ASYNC_EVENTS + SYNC_EVENTS + STREAM_EVENTS + ("SQS",)
    for fname, function in functions.items():
        for ename, event in (props(function).get("Events") or {}).items():
            kind = event.get("Type") if isinstance(event, dict) else None
            where = f"{fname}.Events.{ename} ({kind})"
            if kind not in known:
                found.append(
                    f"{where}: an event source this check does not know; say in "
                    "check_template.py what keeps its failed events (retries, a dead-letter "
                    "queue, its alarm)"
                )
            elif kind == "SQS" and getatt(props(event).get("Queue"), "Arn") not in queues:
                found.append(
                    f"{where}: Queue must be !GetAtt <Queue>.Arn of a queue this template "
                    "declares (so its redrive policy is checked)"
                )
    for qname in sorted(sources & set(queues)):
        redrive = props(queues[qname]).get("RedrivePolicy") or {}
        target = getatt(redrive.get("deadLetterTargetArn"), "Arn")
        if not isinstance(redrive.get("maxReceiveCount"), int) or target not in queues:
            found.append(
                f"{qname}: polled by an SQS event source, so it needs a RedrivePolicy with "
                "maxReceiveCount (its retries) and deadLetterTargetArn !GetAtt <Queue>.Arn of a "
                f"declared queue (alarmed), not {redrive!r}"
            )
        elif target in sources:
            found.append(f"{qname}: its dead-letter queue {target} is itself a polled queue")
    return found


def stream_event_failures(template, functions, queues):
    """DynamoDB stream events that could lose a record, or fall behind unseen (see the
    module's docs)."""
    found = []
    tables = resources(template, "AWS::DynamoDB::Table")
    for fname, function in functions.items():
        for ename, event in events_of(function, STREAM_EVENTS):
            where = f"{fname}.Events.{ename} (DynamoDB)"
            p = props(event)
            table = getatt(p.get("Stream"), "StreamArn")
            view = ((props(tables[table]).get("StreamSpecification") or {}).get("StreamViewType")
                    if table in tables else None)
            if view != "NEW_AND_OLD_IMAGES":
                found.append(
                    f"{where}: Stream must be !GetAtt <Table>.StreamArn of a declared table whose "
                    f"StreamSpecification keeps NEW_AND_OLD_IMAGES (the events are derived from "
                    f"both), not {p.get('Stream')!r} ({view!r})"
                )
            if p.get("StartingPosition") != "TRIM_HORIZON":
                found.append(f"{where}: StartingPosition must be TRIM_HORIZON (LATEST skips records)")
            if "ReportBatchItemFailures" not in (p.get("FunctionResponseTypes") or []):
                found.append(
                    f"{where}: FunctionResponseTypes must include ReportBatchItemFailures (a "
                    "batch resumes at its first unpublished record, in order)"
                )
            if p.get("BisectBatchOnFunctionError") is not True:
                found.append(f"{where}: BisectBatchOnFunctionError must be true")
            retries = p.get("MaximumRetryAttempts")
            age = p.get("MaximumRecordAgeInSeconds")
            if not isinstance(retries, int) or retries < 0:
                found.append(f"{where}: MaximumRetryAttempts must be a bound (0 or more)")
            if not isinstance(age, int) or not 60 <= age < STREAM_RETENTION:
                found.append(
                    f"{where}: MaximumRecordAgeInSeconds must be at least 60 and under the "
                    f"stream's {STREAM_RETENTION} s (a record given up on must still be readable)"
                )
            on_failure = ((p.get("DestinationConfig") or {}).get("OnFailure")) or {}
            if (
                on_failure.get("Type") != "SQS"
                or getatt(on_failure.get("Destination"), "Arn") not in queues
            ):
                found.append(
                    f"{where}: DestinationConfig.OnFailure must be Type SQS with Destination "
                    f"!GetAtt <Queue>.Arn of a declared queue, not {on_failure!r}"
                )
            if not any(
                props(a).get("Namespace") == "AWS/Lambda"
                and props(a).get("MetricName") == "IteratorAge"
                and any(
                    d.get("Name") == "FunctionName" and d.get("Value") == {"Ref": fname}
                    for d in props(a).get("Dimensions") or [] if isinstance(d, dict)
                )
                for a in resources(template, "AWS::CloudWatch::Alarm").values()
            ):
                found.append(
                    f"{fname}: reads a stream but no AWS/Lambda IteratorAge alarm names it "
                    "(events falling behind would go unseen)"
                )
    return found


def output_failures(template):
    """Functions, queues and tables no Output names (see the module's docs)."""
    named = {
        (o.get("Value") or {}).get("Ref")
        for o in (template.get("Outputs") or {}).values()
        if isinstance(o, dict) and isinstance(o.get("Value"), dict)
    }
    found = []
    for kind in ("AWS::Serverless::Function", "AWS::SQS::Queue", "AWS::DynamoDB::Table"):
        for name in resources(template, kind):
            if name not in named:
                found.append(f"{name}: no Output names it (Value: !Ref {name})")
    return found


def alarm_failures(template, functions):
    """Alarms that cannot fire as meant (see the module's docs)."""
    found = []
    alarms = resources(template, "AWS::CloudWatch::Alarm")
    watched = {}
    for aname, alarm in alarms.items():
        p = props(alarm)
        dims = p.get("Dimensions") or []
        namespace = p.get("Namespace")
        if namespace == "AWS/Lambda":
            names = [d.get("Value", {}).get("Ref") for d in dims
                     if isinstance(d, dict) and d.get("Name") == "FunctionName"
                     and isinstance(d.get("Value"), dict)]
            target = names[0] if len(names) == 1 and len(dims) == 1 else None
            if target not in functions:
                found.append(f"{aname}: an AWS/Lambda alarm must have exactly one dimension, "
                             f"FunctionName: !Ref <a function>, not {dims!r}")
                continue
            watched.setdefault(target, set()).add(p.get("MetricName"))
        elif namespace == {"Ref": "MetricsNamespace"} and not dims:
            found.append(f"{aname}: an alarm on snapwake's {p.get('MetricName')} without "
                         "dimensions never fires (every metric is published with Component)")
    for fname in functions:
        for metric in ("Errors", "Throttles"):
            if metric not in watched.get(fname, set()):
                found.append(f"{fname}: no AWS/Lambda {metric} alarm naming it")
    return found


def quota_failures(template, functions):
    """Reserved concurrency that a new account's quota refuses (see the module's docs)."""
    found = []
    parameters = template.get("Parameters") or {}
    for fname, function in functions.items():
        reserve = function_property(template, function, "ReservedConcurrentExecutions")
        if reserve is None:
            continue
        where = f"{fname}: ReservedConcurrentExecutions"
        choice = reserve.get("Fn::If") if isinstance(reserve, dict) else None
        if not (isinstance(choice, list) and len(choice) == 3
                and choice[2] == {"Ref": "AWS::NoValue"}
                and isinstance(choice[1], dict) and "Ref" in choice[1]):
            found.append(
                f"{where} is hard-coded ({reserve!r}): it must be !If [<condition>, "
                "!Ref <parameter>, !Ref AWS::NoValue], off by default"
            )
            continue
        parameter = parameters.get(choice[1]["Ref"]) or {}
        if parameter.get("Type") != "Number" or str(parameter.get("Default")) != "0":
            found.append(
                f"{where}: parameter {choice[1]['Ref']} must be a Number defaulting to 0, "
                f"not {parameter.get('Type')!r} defaulting to {parameter.get('Default')!r}"
            )
    return found


# ---------------------------------------------------------------------------------------------
# IAM: each function's role, as SAM writes it, grants exactly the function's own statements and
# what SAM adds for Lambda's use of the role. Whether those statements are what the code calls
# is not this script's question: every AWS call the test suites make is recorded per function
# and checked against these statements by tests/tests/iam.rs.
#
# A grant is (action, resource, condition). Resources are named as the template names them: a
# resource `!GetAtt X.Arn` is X, `!Sub "${Table.Arn}/index/by_owner"` is Table/index/by_owner,
# `!Ref P` is P, ANY is "*". Metrics are embedded in the logs (EMF, shared/src/metrics.rs): no
# cloudwatch:PutMetricData. No function calls X-Ray itself (no X-Ray SDK: with Tracing=Active,
# Lambda records each invocation's segments; see XRAY).

ANY = "*"
# The only items the list function may write (docs/table.md, "The items"): the list cursor key
# and the AgentKit budget's.
LIST_WRITES = "ForAllValues:StringLike dynamodb:LeadingKeys=BUDGET#*,KEY#cursor"
LIST_FUNCTION = "ListFunction"
LIST_WRITE_ACTIONS = ("dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:DeleteItem")

# AWS managed policies a role may attach, and what they allow (all on "*"). Any other is a
# failure: its actions cannot be known offline.
MANAGED_POLICIES = {
    # SAM attaches it to every role it makes: Lambda writes the function's logs with it.
    "service-role/AWSLambdaBasicExecutionRole": (
        "logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents",
    ),
    # SAM attaches it when a function's Tracing is anything but Disabled (AWSXRayDaemonWriteAccess
    # outside the aws partition): Lambda sends the invocation's trace segments with it.
    "AWSXrayWriteOnlyAccess": (
        "xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules",
        "xray:GetSamplingTargets", "xray:GetSamplingStatisticSummaries",
    ),
    # SAM attaches it to a function with a DynamoDB stream event: Lambda reads the stream for
    # the mapping with it (and writes the function's logs).
    "service-role/AWSLambdaDynamoDBExecutionRole": (
        "dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator",
        "dynamodb:ListStreams", "logs:CreateLogGroup", "logs:CreateLogStream",
        "logs:PutLogEvents",
    ),
    "AWSXRayDaemonWriteAccess": (
        "xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules",
        "xray:GetSamplingTargets", "xray:GetSamplingStatisticSummaries",
    ),
}


def _grants(resource, *actions, condition=""):
    return {(action, resource, condition) for action in actions}


# Every function's logs (AWSLambdaBasicExecutionRole, which SAM adds).
LOGS = _grants(ANY, *MANAGED_POLICIES["service-role/AWSLambdaBasicExecutionRole"])
# With Tracing=Active, on every function (AWSXrayWriteOnlyAccess, which SAM adds), on top of
# sam_additions.
XRAY = _grants(ANY, *MANAGED_POLICIES["AWSXrayWriteOnlyAccess"])
# What AWSLambdaDynamoDBExecutionRole allows (on "*"): Lambda reading a stream for a mapping.
STREAM_READ = _grants(
    ANY, "dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator",
    "dynamodb:ListStreams",
)

def own_grants(fname, function):
    """The grants `function`'s own Policies write as statements (SAM's policy templates and
    managed policies are not read here: what they add shows up in the role as grants beyond
    these); problems for what cannot be read exactly, or does not belong there."""
    grants, problems = set(), []
    for policy in _listed(props(function).get("Policies") or []):
        if isinstance(policy, dict) and "Statement" in policy:
            more, why = _document_grants(policy, fname)
            grants |= more
            problems.extend(why)
    for action, resource, condition in sorted(grants):
        if action.startswith("xray:"):
            problems.append(
                f"{fname}: grants {action} in its Policies; the Tracing parameter grants X-Ray "
                "(SAM adds it with Tracing=Active, and only then)"
            )
        if fname == LIST_FUNCTION and action in LIST_WRITE_ACTIONS and condition != LIST_WRITES:
            problems.append(
                f"{fname}: allows {action} on {resource} without {LIST_WRITES!r}: the list "
                "function writes only the budget's items and the cursor key (docs/table.md)"
            )
    return grants, problems


def _on_failure_queue(config):
    destination = (((config or {}).get("DestinationConfig") or {}).get("OnFailure") or {})
    return getatt(destination.get("Destination"), "Arn")


def sam_additions(function):
    """What SAM adds to a function's role for Lambda's own use of it: the function's logs, a
    DynamoDB stream event's reads (AWSLambdaDynamoDBExecutionRole), sending to an on-failure
    queue (EventInvokeConfig's, a stream event's)."""
    grants = set(LOGS)
    p = props(function)
    queue = _on_failure_queue(p.get("EventInvokeConfig"))
    if queue:
        grants |= _grants(queue, "sqs:SendMessage")
    for event in (p.get("Events") or {}).values():
        if isinstance(event, dict) and event.get("Type") in STREAM_EVENTS:
            grants |= STREAM_READ
            queue = _on_failure_queue(event.get("Properties"))
            if queue:
                grants |= _grants(queue, "sqs:SendMessage")
    return grants


TRACING_PARAMETER = "Tracing"
# The parameter's values, as SAM reads them: Disabled leaves a function without TracingConfig
# (Lambda's default, PassThrough) and its role without X-Ray; Active adds both. The IAM check
# translates the template with each. (SAM grants X-Ray for PassThrough too, though Lambda then
# sends nothing: hence Disabled, not PassThrough.)
TRACING_VALUES = ["Disabled", "Active"]


class _NoManagedPolicies:
    """Managed policy names resolve from the translator's bundled map, never from IAM."""

    def load(self):
        return {}


def translate(template, parameters=None):
    """The CloudFormation SAM makes of `template` (aws-sam-translator, the transform `sam deploy`
    runs), with `parameters` over the template's defaults. Raises the translator's
    InvalidDocumentException on a template it refuses."""
    import logging
    import os

    from samtranslator.translator.transform import transform

    # The transform resolves pseudo parameters (AWS::Region) for its own bookkeeping; any region
    # will do offline. It also warns about its own unpublished metrics: not ours.
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    template = copy.deepcopy(template)
    # `sam package` replaces each local CodeUri with the S3 object it uploaded; stand in for it.
    for resource in (template.get("Resources") or {}).values():
        if isinstance(resource, dict) and resource.get("Type") == "AWS::Serverless::Function":
            (resource.setdefault("Properties", {}) or {})["CodeUri"] = (
                "s3://snapwake-lint/function.zip"
            )
    return transform(template, dict(parameters or {}), _NoManagedPolicies())


def _listed(value):
    return value if isinstance(value, list) else [value]


def _resource_name(value):
    """A statement's resource as a grant names it (see the IAM section's comment)."""
    if value == "*":
        return ANY
    if isinstance(value, dict) and list(value) == ["Ref"]:
        return value["Ref"]
    target = getatt(value, "Arn")
    if target:
        return target
    if isinstance(value, dict) and isinstance(value.get("Fn::Sub"), str):
        text = value["Fn::Sub"]
        while "${" in text and ".Arn}" in text:
            start = text.index("${")
            end = text.index("}", start)
            name = text[start + 2:end]
            if not name.endswith(".Arn"):
                break
            text = text[:start] + name[: -len(".Arn")] + text[end + 1:]
        return text
    return json.dumps(value, sort_keys=True)


def _condition_text(condition):
    if not condition:
        return ""
    if not isinstance(condition, dict):
        return json.dumps(condition, sort_keys=True)
    parts = []
    for operator, tests in sorted(condition.items()):
        if not isinstance(tests, dict):
            parts.append(f"{operator} {json.dumps(tests, sort_keys=True)}")
            continue
        for key, values in sorted(tests.items()):
            listed = ",".join(sorted(str(v) for v in _listed(values)))
            parts.append(f"{operator} {key}={listed}")
    return "; ".join(parts)


def _describe(grant):
    action, resource, condition = grant
    return f"{action} on {resource}" + (f" if {condition}" if condition else "")


def _document_grants(document, where):
    """The (action, resource, condition) an IAM policy document allows; problems for what cannot
    be read exactly."""
    grants, problems = set(), []
    if not isinstance(document, dict) or any(k.startswith("Fn::") for k in document):
        return grants, [f"{where}: a conditional or unreadable policy {document!r}"]
    for statement in _listed(document.get("Statement") or []):
        if not isinstance(statement, dict) or any(k.startswith("Fn::") for k in statement):
            problems.append(f"{where}: a conditional or unreadable statement {statement!r}")
            continue
        if statement.get("Effect") != "Allow":
            continue  # a Deny only takes away
        if "NotAction" in statement or "NotResource" in statement:
            problems.append(f"{where}: NotAction/NotResource allows more than it names")
            continue
        condition = _condition_text(statement.get("Condition"))
        for action in _listed(statement.get("Action")):
            for resource in _listed(statement.get("Resource")):
                grants.add((str(action), _resource_name(resource), condition))
    return grants, problems


def _managed_policy_name(arn):
    if isinstance(arn, dict) and isinstance(arn.get("Fn::Sub"), str):
        arn = arn["Fn::Sub"]
    if isinstance(arn, str) and ":iam::aws:policy/" in arn:
        return arn.split(":iam::aws:policy/", 1)[1]
    return None


def role_grants(out, function):
    """What the role of `function` (a logical id) allows in the translated template `out`, from
    its own policies, the managed policies it attaches and any policy resource that names it."""
    found = (out.get("Resources") or {})
    lambda_function = found.get(function) or {}
    role = getatt(props(lambda_function).get("Role"), "Arn")
    if (found.get(role) or {}).get("Type") != "AWS::IAM::Role":
        return set(), [
            f"{function}: its role is not one SAM makes from its Policies "
            f"(Role: {props(lambda_function).get('Role')!r}), so what it allows cannot be checked"
        ]
    grants, problems = set(), []
    p = props(found[role])
    for arn in _listed(p.get("ManagedPolicyArns") or []):
        name = _managed_policy_name(arn)
        if name in MANAGED_POLICIES:
            grants |= _grants(ANY, *MANAGED_POLICIES[name])
        elif isinstance(arn, dict) and (found.get(arn.get("Ref")) or {}).get("Type") == (
            "AWS::IAM::ManagedPolicy"
        ):
            more, why = _document_grants(
                props(found[arn["Ref"]]).get("PolicyDocument"), f"{function}: {arn['Ref']}"
            )
            grants |= more
            problems.extend(why)
        else:
            problems.append(
                f"{function}: attaches the managed policy {arn!r}, whose actions this check "
                "cannot know (list them in MANAGED_POLICIES, or grant them in Policies instead)"
            )
    for policy in _listed(p.get("Policies") or []):
        named = isinstance(policy, dict) and "PolicyName" in policy
        more, why = _document_grants(
            policy.get("PolicyDocument") if named else policy,
            f"{function}: policy {policy['PolicyName']}" if named else function,
        )
        grants |= more
        problems.extend(why)
    # Policies attached from elsewhere in the template.
    for pname, policy in found.items():
        kind = (policy or {}).get("Type")
        if kind not in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::IAM::RolePolicy"):
            continue
        pp = props(policy)
        roles = _listed(pp.get("Roles") or []) + _listed(pp.get("RoleName") or [])
        if {"Ref": role} in roles or role in roles:
            more, why = _document_grants(pp.get("PolicyDocument"), f"{function}: {pname}")
            grants |= more
            problems.extend(why)
    return grants, problems


def tracing_failures(template, functions):
    """The Tracing parameter sets every function's Tracing, and nothing else does."""
    found = []
    parameter = (template.get("Parameters") or {}).get(TRACING_PARAMETER)
    if not isinstance(parameter, dict):
        found.append(f"no parameter {TRACING_PARAMETER}")
    elif (parameter.get("AllowedValues"), parameter.get("Default")) != (TRACING_VALUES, "Disabled"):
        found.append(
            f"parameter {TRACING_PARAMETER}: must have AllowedValues {TRACING_VALUES} and "
            f"Default Disabled, not {parameter.get('AllowedValues')!r} and "
            f"{parameter.get('Default')!r}"
        )
    shared = ((template.get("Globals") or {}).get("Function") or {}).get("Tracing")
    if shared != {"Ref": TRACING_PARAMETER}:
        found.append(f"Globals.Function.Tracing must be !Ref {TRACING_PARAMETER}, not {shared!r}")
    for fname, function in functions.items():
        if "Tracing" in props(function):
            found.append(
                f"{fname}: sets its own Tracing ({props(function)['Tracing']!r}); the "
                f"{TRACING_PARAMETER} parameter sets it for every function (Globals)"
            )
    return found


def iam_failures(template, functions):
    """Roles that allow more, or less, than their function's own statements and what SAM adds
    for Lambda's use (see the module's docs)."""
    found = []
    own = {}
    for fname, function in functions.items():
        grants, problems = own_grants(fname, function)
        own[fname] = grants | sam_additions(function)
        found.extend(problems)
    # Both ways the template deploys, which differ by X-Ray alone; each difference is said once,
    # with the Tracing value it is found with when not both.
    differences = {}
    for tracing in TRACING_VALUES:
        try:
            out = translate(template, {TRACING_PARAMETER: tracing})
        except Exception as e:  # the translator's refusal, with its reasons
            causes = "; ".join(c.message for c in getattr(e, "causes", [])) or repr(e)
            message = f"the SAM transform refuses the template: {causes}"
            differences.setdefault(message, set()).add(tracing)
            continue
        for fname in functions:
            granted, problems = role_grants(out, fname)
            expected = own[fname] | (XRAY if tracing == "Active" else set())
            said = problems + [
                f"{fname}: allows {_describe(grant)}, which neither its own statements nor "
                "SAM's additions grant"
                for grant in sorted(granted - expected)
            ]
            if granted or not problems:
                said += [
                    f"{fname}: does not allow {_describe(grant)}, which its own statements or "
                    "SAM's additions grant"
                    for grant in sorted(expected - granted)
                ]
            for message in said:
                differences.setdefault(message, set()).add(tracing)
            traced = props((out.get("Resources") or {}).get(fname) or {}).get("TracingConfig")
            if bool(traced) != (tracing == "Active"):
                differences.setdefault(
                    f"{fname}: TracingConfig is {traced!r} with Tracing={tracing}", set()
                ).add(tracing)
    for message, tracings in differences.items():
        if len(tracings) < len(TRACING_VALUES):
            message += f" (with Tracing={', '.join(sorted(tracings))})"
        found.append(message)
    return found


# ---------------------------------------------------------------------------------------------
# The self-test: each mutation must be caught, with a message mentioning `expect`.


def _first_event(t, kind, function=None):
    for fname, f in resources(t, "AWS::Serverless::Function").items():
        if function and fname != function:
            continue
        for ename, e in rule_events(f):
            if e["Type"] == kind:
                return fname, ename, props(e)
    raise AssertionError(f"the template has no {kind} event to mutate")


def _first_queue_alarm(t):
    for qname in resources(t, "AWS::SQS::Queue"):
        for aname, _ in queue_alarms(t, qname):
            return qname, aname
    raise AssertionError("the template has no queue alarm to mutate")


def _drop(key):
    def go(t, kind):
        fname, ename, p = _first_event(t, kind)
        del p[key]
        return f"{fname}.Events.{ename}"
    return go


def _auto_dlq(t):
    fname, ename, p = _first_event(t, "Schedule")
    p["DeadLetterConfig"] = {"Type": "SQS"}
    return f"{fname}.Events.{ename}"


def _drop_alarm(t):
    qname, aname = _first_queue_alarm(t)
    del t["Resources"][aname]
    return qname


def _alarm_on_other_queue(t):
    qname, aname = _first_queue_alarm(t)
    other = next(q for q in resources(t, "AWS::SQS::Queue") if q != qname)
    for d in props(t["Resources"][aname])["Dimensions"]:
        if d.get("Name") == "QueueName":
            d["Value"] = {"Fn::GetAtt": [other, "QueueName"]}
    return qname


def _alarm_threshold(t):
    _, aname = _first_queue_alarm(t)
    props(t["Resources"][aname])["Threshold"] = 5
    return aname


def _unalarmed_queue(t):
    t["Resources"]["StrayQueue"] = {
        "Type": "AWS::SQS::Queue",
        "Properties": {"MessageRetentionPeriod": FOURTEEN_DAYS, "SqsManagedSseEnabled": True},
    }
    return "StrayQueue"


def _unencrypted(t):
    qname = next(iter(resources(t, "AWS::SQS::Queue")))
    del props(t["Resources"][qname])["SqsManagedSseEnabled"]
    return qname


def _drop_queue_policy(t):
    fname, ename, p = _first_event(t, "EventBridgeRule")
    queue = getatt(p["DeadLetterConfig"]["Arn"], "Arn")
    for pname, policy in resources(t, "AWS::SQS::QueuePolicy").items():
        if lets_rule_send(policy, queue, fname + ename):
            del t["Resources"][pname]
    return f"{fname}.Events.{ename}"


def _policy_other_rule(t):
    fname, ename, p = _first_event(t, "EventBridgeRule")
    queue = getatt(p["DeadLetterConfig"]["Arn"], "Arn")
    for policy in resources(t, "AWS::SQS::QueuePolicy").values():
        if lets_rule_send(policy, queue, fname + ename):
            for s in statements(policy):
                for c in (s.get("Condition") or {}).values():
                    c["aws:SourceArn"] = {"Fn::GetAtt": ["SomeOtherRule", "Arn"]}
    return f"{fname}.Events.{ename}"


def _new_schedule_v2(t):
    props(t["Resources"][DELETE_FUNCTION])["Events"]["Nightly"] = {
        "Type": "ScheduleV2", "Properties": {"ScheduleExpression": "rate(1 day)"},
    }
    return f"{DELETE_FUNCTION}.Events.Nightly"


def _drop_invoke_config(function):
    def go(t):
        fname, _, _ = _first_event(t, "Schedule", function)
        del props(t["Resources"][fname])["EventInvokeConfig"]
        return f"{fname}: has"
    return go


def _drop_on_failure(t):
    fname, _, _ = _first_event(t, "EventBridgeRule")
    del props(t["Resources"][fname])["EventInvokeConfig"]["DestinationConfig"]["OnFailure"]
    return f"{fname}: EventInvokeConfig.DestinationConfig.OnFailure"


def _pattern(source):
    def go(t):
        events = props(t["Resources"][DELETE_FUNCTION])["Events"]
        pattern = props(events[OFFBOARDING_EVENT])["Pattern"]
        if source is None:
            del pattern["source"]
        else:
            pattern["source"] = source
        return "Pattern.source"
    return go


def _environment(value):
    def go(t):
        variables = props(t["Resources"][DELETE_FUNCTION])["Environment"]["Variables"]
        if value is None:
            del variables[SOURCES_VARIABLE]
        else:
            variables[SOURCES_VARIABLE] = value
        return SOURCES_VARIABLE
    return go


def _drop_refresh(t):
    del props(t["Resources"][DELETE_FUNCTION])["Events"]["Refresh"]
    return f"{DELETE_FUNCTION}.Events.Refresh"


def _refresh_input(t):
    refresh = props(t["Resources"][DELETE_FUNCTION])["Events"]["Refresh"]
    props(refresh)["Input"] = '{"action": "sweep"}'
    return f"{DELETE_FUNCTION}.Events.Refresh"


def _reserve(value):
    def go(t):
        props(t["Resources"]["ResumeFunction"])["ReservedConcurrentExecutions"] = value
        return "ResumeFunction"
    return go


def _reserve_default(t):
    t["Parameters"]["ResumeReservedConcurrency"]["Default"] = 100
    return "ResumeFunction"


def _without_dimensions(alarm):
    def go(t):
        props(t["Resources"][alarm]).pop("Dimensions")
        return alarm
    return go


def _without(section, name, named):
    """`name` taken out of the template's `section`; the check must then name `named`."""
    def go(t):
        del t[section][name]
        return named
    return go


def _statements(t, function):
    return props(t["Resources"][function])["Policies"][0]["Statement"]


def _allow(function, action, resource):
    def go(t):
        _statements(t, function).append(
            {"Effect": "Allow", "Action": action, "Resource": resource}
        )
        return f"{function}: allows {action} on"
    return go


def _policy(function, policy, expect):
    def go(t):
        props(t["Resources"][function])["Policies"].append(policy)
        return f"{function}: {expect}"
    return go


def _drop_condition(t):
    for s in _statements(t, "ListFunction"):
        s.pop("Condition", None)
    return "ListFunction: allows dynamodb:UpdateItem on Table without"








def _policy_resource(t):
    t["Resources"]["StrayPolicy"] = {
        "Type": "AWS::IAM::Policy",
        "Properties": {
            "PolicyName": "stray",
            "Roles": [{"Ref": "ResumeFunctionRole"}],
            "PolicyDocument": {"Statement": [{
                "Effect": "Allow", "Action": "dynamodb:PutItem",
                "Resource": {"Fn::GetAtt": ["Table", "Arn"]},
            }]},
        },
    }
    return "ResumeFunction: allows dynamodb:PutItem on Table"


def _own_role(t):
    p = props(t["Resources"]["ResumeFunction"])
    p.pop("Policies")
    p["Role"] = "arn:aws:iam::123456789012:role/snapwake-anything"
    return "ResumeFunction: its role is not one SAM makes"




def _tracing(value):
    def go(t):
        t["Globals"]["Function"]["Tracing"] = value
        return "Globals.Function.Tracing must be"
    return go


def _xray_policy(t):
    _allow("DeployFunction", "xray:PutTraceSegments", "*")(t)
    return "DeployFunction: grants xray:PutTraceSegments in its Policies"


def _no_tracing(t):
    del t["Globals"]["Function"]["Tracing"]
    return "ListFunction: does not allow xray:PutTraceSegments on *, which its own statements " \
        "or SAM's additions grant (with Tracing=Active)"


def _own_tracing(t):
    props(t["Resources"]["CreateFunction"])["Tracing"] = "Active"
    return "CreateFunction: sets its own Tracing"


def _tracing_parameter(key, value):
    def go(t):
        t["Parameters"][TRACING_PARAMETER][key] = value
        return f"parameter {TRACING_PARAMETER}"
    return go


def _sqs_source(redrive):
    def go(t):
        queue = {"MessageRetentionPeriod": FOURTEEN_DAYS, "SqsManagedSseEnabled": True}
        if redrive is not None:
            queue["RedrivePolicy"] = redrive
        t["Resources"]["WorkQueue"] = {"Type": "AWS::SQS::Queue", "Properties": queue}
        props(t["Resources"][DELETE_FUNCTION])["Events"]["Work"] = {
            "Type": "SQS", "Properties": {"Queue": {"Fn::GetAtt": ["WorkQueue", "Arn"]}},
        }
        return "WorkQueue: polled by an SQS event source"
    return go


def _mapped_queue_without_redrive(t):
    mapping = next(iter(resources(t, "AWS::Lambda::EventSourceMapping").values()))
    qname = getatt(props(mapping).get("EventSourceArn"), "Arn")
    props(t["Resources"][qname]).pop("RedrivePolicy", None)
    return f"{qname}: polled by an SQS event source"


def _sns_without_invoke_config(t):
    props(t["Resources"]["CreateFunction"])["Events"]["Notice"] = {
        "Type": "SNS", "Properties": {"Topic": "arn:aws:sns:us-east-1:123456789012:notices"},
    }
    return "CreateFunction: has Notice events but no EventInvokeConfig"


def _stream_source(t):
    props(t["Resources"]["DeployFunction"])["Events"]["Stream"] = {
        "Type": "Kinesis",
        "Properties": {
            "Stream": "arn:aws:kinesis:us-east-1:123456789012:stream/s",
            "StartingPosition": "LATEST",
        },
    }
    return "DeployFunction.Events.Stream (Kinesis): an event source this check does not know"


def _announce_stream(key, value):
    def mutate(t):
        p = props(t["Resources"]["AnnounceFunction"])["Events"]["Stream"]["Properties"]
        if value is None:
            p.pop(key)
        else:
            p[key] = value
        return "AnnounceFunction.Events.Stream (DynamoDB)"
    return mutate


def _table_without_stream(t):
    props(t["Resources"]["Table"]).pop("StreamSpecification")
    return "keeps NEW_AND_OLD_IMAGES"


def _drop_iterator_age_alarm(t):
    t["Resources"].pop("AnnounceIteratorAgeAlarm")
    return "AnnounceFunction: reads a stream but no AWS/Lambda IteratorAge alarm"




MUTATIONS = [
    ("a Schedule event without RetryPolicy", lambda t: _drop("RetryPolicy")(t, "Schedule")),
    ("an EventBridgeRule event without RetryPolicy",
     lambda t: _drop("RetryPolicy")(t, "EventBridgeRule")),
    ("a Schedule event without DeadLetterConfig",
     lambda t: _drop("DeadLetterConfig")(t, "Schedule")),
    ("an EventBridgeRule event without DeadLetterConfig",
     lambda t: _drop("DeadLetterConfig")(t, "EventBridgeRule")),
    ("a dead-letter queue SAM makes (Type: SQS, no alarm)", _auto_dlq),
    ("a new ScheduleV2 event with neither", _new_schedule_v2),
    ("a DLQ whose queue policy is gone", _drop_queue_policy),
    ("a DLQ whose queue policy names another rule", _policy_other_rule),
    ("a queue whose alarm is gone", _drop_alarm),
    ("a queue alarm that watches another queue", _alarm_on_other_queue),
    ("a queue alarm with threshold 5", _alarm_threshold),
    ("a new queue without an alarm", _unalarmed_queue),
    ("an unencrypted queue", _unencrypted),
    ("the delete function without EventInvokeConfig", _drop_invoke_config(DELETE_FUNCTION)),
    ("the deploy function without EventInvokeConfig", _drop_invoke_config("DeployFunction")),
    ("an EventInvokeConfig without OnFailure", _drop_on_failure),
    ("the Offboarding pattern without source", _pattern(None)),
    ("the Offboarding pattern with a literal source", _pattern(["snapwake.offboarding"])),
    ("the delete function without SNAPWAKE_OFFBOARDING_SOURCES", _environment(None)),
    ("SNAPWAKE_OFFBOARDING_SOURCES a literal", _environment("snapwake.offboarding")),
    ("no Refresh schedule", _drop_refresh),
    ("the Refresh schedule with another action", _refresh_input),
    ("a hard-coded reserved concurrency", _reserve(100)),
    ("a reserve without the NoValue branch",
     _reserve({"Fn::If": ["ReservesResume", {"Ref": "ResumeReservedConcurrency"}, 100]})),
    ("a reserve parameter defaulting to 100", _reserve_default),
    ("a Lambda alarm without FunctionName", _without_dimensions("ResumeFunctionErrorsAlarm")),
    (
        "a function without a Throttles alarm",
        _without("Resources", "DeleteFunctionThrottlesAlarm", "DeleteFunction"),
    ),
    (
        "an alarm on a snapwake metric without dimensions",
        _without_dimensions("AgentKitThrottlesAlarm"),
    ),
    ("a function no Output names", _without("Outputs", "ResumeFunctionName", "ResumeFunction")),
    ("the list function's UpdateItem on any item (no LeadingKeys)", _drop_condition),
    ("a SAM policy template on the list function (DynamoDBCrudPolicy)",
     _policy("ListFunction", {"DynamoDBCrudPolicy": {"TableName": {"Ref": "Table"}}},
             "allows dynamodb:DeleteItem")),
    ("an AWS managed policy on the list function",
     _policy("ListFunction", "AmazonDynamoDBReadOnlyAccess", "attaches the managed policy")),
    ("a conditional policy on the list function (Fn::If)",
     _policy("ListFunction", {"Fn::If": ["HasAlarmTopic", {"Statement": [{
         "Effect": "Allow", "Action": "dynamodb:DeleteItem", "Resource": "*"}]},
         {"Ref": "AWS::NoValue"}]}, "a conditional or unreadable policy")),
    ("an IAM policy resource on a function's role", _policy_resource),
    ("a function with a role of its own", _own_role),
    ("an SQS event source whose queue has no redrive policy", _sqs_source(None)),
    ("an SQS event source whose dead-letter queue is not declared",
     _sqs_source({"deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:elsewhere",
                  "maxReceiveCount": 5})),
    ("a queue an event source mapping polls, without a redrive policy",
     _mapped_queue_without_redrive),
    ("an SNS event on a function without EventInvokeConfig", _sns_without_invoke_config),
    ("a Kinesis event source (no check knows it)", _stream_source),
    ("the announce stream without an on-failure queue",
     _announce_stream("DestinationConfig", None)),
    ("the announce stream without partial batch failures",
     _announce_stream("FunctionResponseTypes", [])),
    ("the announce stream without bisection", _announce_stream("BisectBatchOnFunctionError", None)),
    ("the announce stream keeping records past the stream's retention",
     _announce_stream("MaximumRecordAgeInSeconds", -1)),
    ("the announce stream retrying forever", _announce_stream("MaximumRetryAttempts", -1)),
    ("the announce stream from LATEST", _announce_stream("StartingPosition", "LATEST")),
    ("a table without its stream", _table_without_stream),
    ("the announce function without its IteratorAge alarm", _drop_iterator_age_alarm),
    ("X-Ray granted in a function's Policies (so with Tracing off too)", _xray_policy),
    ("every function traced whatever the parameter (Tracing: Active)", _tracing("Active")),
    ("no Tracing in Globals (the parameter sets nothing)", _no_tracing),
    ("a function with its own Tracing", _own_tracing),
    ("the Tracing parameter defaulting to Active", _tracing_parameter("Default", "Active")),
    ("the Tracing parameter offering PassThrough (SAM grants X-Ray for it)",
     _tracing_parameter("AllowedValues", ["Disabled", "PassThrough", "Active"])),
]


def self_test(template):
    problems = []
    baseline = check(template)
    if baseline:
        problems.append("the template as it is fails the check (fix it first):")
        problems.extend("  " + f for f in baseline)
    for name, mutate in MUTATIONS:
        mutated = copy.deepcopy(template)
        try:
            expect = mutate(mutated)
        except (AssertionError, KeyError, StopIteration) as e:
            problems.append(f"cannot apply mutation '{name}': {e!r}")
            continue
        caught = [f for f in check(mutated) if expect in f]
        if caught:
            print(f"self-test: caught {name}: {caught[0]}")
        else:
            problems.append(f"mutation '{name}' was not caught (no failure mentions {expect!r})")
    return problems


def main(argv):
    args = [a for a in argv if a != "--self-test"]
    if len(args) > 1 or any(a.startswith("-") for a in args):
        print(__doc__, file=sys.stderr)
        return 2
    path = args[0] if args else TEMPLATE
    template = load_template(path)
    if "--self-test" in argv:
        problems = self_test(template)
        for p in problems:
            print(f"check_template --self-test: FAIL {p}", file=sys.stderr)
        if problems:
            return 1
        print(f"check_template --self-test: all {len(MUTATIONS)} mutations caught")
        return 0
    failures = check(template)
    for f in failures:
        print(f"check_template: FAIL {f}", file=sys.stderr)
    if failures:
        print(f"check_template: {path}: {len(failures)} failure(s)", file=sys.stderr)
        return 1
    functions = resources(template, "AWS::Serverless::Function").values()
    n_events = sum(len(list(rule_events(f))) for f in functions)
    n_queues = len(resources(template, "AWS::SQS::Queue"))
    print(
        f"check_template: {path}: {n_events} event sources with retry policy and DLQ, "
        f"{n_queues} queues alarmed, on-failure destinations, OffboardingSources, Refresh, "
        f"{len(functions)} functions' IAM as their own statements and SAM's additions: ok"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
