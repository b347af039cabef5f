//! The MCP conformance suite's own fixtures, for a test build only (feature
//! `conformance-fixtures`, refused in release builds by `lib.rs`): the `test_*` tools,
//! the `test://` resources and the `test_*` prompts its scenarios call, plus logging.
//!
//! Without them most scenarios report "not testable" and say nothing about the
//! protocol layer Airlock serves. [`WithFixtures`] wraps the real [`AirlockMcp`]: every
//! request that is not for a fixture goes to it unchanged, so the suite also checks
//! Airlock's own tools, discovery, sessions, headers and errors. No fixture touches a
//! browser, the gateway or the audit record.
// The suite still exercises logging, sampling and roots, which SEP-2577 deprecates.
#![allow(deprecated)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use rmcp::model::*;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::AirlockMcp;

mod tasks;

/// A 1×1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV header with no samples.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

/// [`AirlockMcp`] with the suite's fixtures beside its own tools.
#[derive(Clone)]
pub struct WithFixtures {
    inner: AirlockMcp,
    /// The level `logging/setLevel` chose for this MCP session (stateful era).
    level: Arc<Mutex<Option<LoggingLevel>>>,
    subscribed: Arc<Mutex<HashSet<String>>>,
}

impl WithFixtures {
    pub fn new(inner: AirlockMcp) -> WithFixtures {
        WithFixtures {
            inner,
            level: Arc::default(),
            subscribed: Arc::default(),
        }
    }
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

fn from<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// A complete result, built from its JSON (the 2026-07-28 wire says so in `resultType`).
fn complete<T: serde::de::DeserializeOwned>(mut value: Value) -> Result<T, ErrorData> {
    value["resultType"] = json!("complete");
    from(value)
}

fn text(message: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(message)])
}

const NO_ARGS: &[&str] = &[
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_error_handling",
    "test_tool_with_progress",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "test_missing_capability",
    "test_streaming_elicitation",
    "test_logging_tool",
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities",
];

/// The Tasks extension's fixtures (SEP-2663), with their arguments.
const TASK_TOOLS: &[(&str, &[(&str, &str)])] = &[
    ("greet", &[("name", "string")]),
    (
        "slow_compute",
        &[("seconds", "number"), ("label", "string")],
    ),
    ("failing_job", &[]),
    ("protocol_error_job", &[]),
    ("confirm_delete", &[("filename", "string")]),
    ("multi_input", &[]),
    ("test_tool_with_task", &[]),
];

fn is_fixture(name: &str) -> bool {
    NO_ARGS.contains(&name)
        || TASK_TOOLS.iter().any(|(n, _)| *n == name)
        || matches!(
            name,
            "test_sampling" | "test_elicitation" | "json_schema_2020_12_tool"
        )
}

fn tools() -> Vec<Tool> {
    let empty = json!({"type": "object", "properties": {}});
    let mut tools: Vec<Tool> = NO_ARGS
        .iter()
        .map(|name| {
            Tool::new(
                *name,
                format!("Conformance fixture {name}"),
                object(empty.clone()),
            )
        })
        .collect();
    for (name, arg) in [("test_sampling", "prompt"), ("test_elicitation", "message")] {
        tools.push(Tool::new(
            name,
            format!("Conformance fixture {name}"),
            object(json!({
                "type": "object",
                "properties": {arg: {"type": "string"}},
                "required": [arg],
            })),
        ));
    }
    for (name, args) in TASK_TOOLS {
        let properties: serde_json::Map<String, Value> = args
            .iter()
            .map(|(arg, kind)| ((*arg).to_owned(), json!({"type": kind})))
            .collect();
        tools.push(Tool::new(
            *name,
            format!("Conformance fixture {name}"),
            object(json!({"type": "object", "properties": properties})),
        ));
    }
    // The suite checks that 2020-12 keywords reach the client as written.
    let draft = "https://json-schema.org/draft/2020-12/schema";
    tools.push(Tool::new(
        "json_schema_2020_12_tool",
        "Conformance fixture json_schema_2020_12_tool",
        object(json!({
            "$schema": draft,
            "type": "object",
            "$defs": {"address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }},
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"},
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false,
        })),
    ));
    tools
}

fn rank(level: &LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

fn elicit(message: &str, field: &str, kind: &str) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {field: {"type": kind}},
                "required": [field],
            },
        },
    })
}

fn sample(prompt: &str, max_tokens: u32) -> Value {
    json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
            "maxTokens": max_tokens,
        },
    })
}

fn roots() -> Value {
    json!({"method": "roots/list", "params": {}})
}

fn input_required(
    requests: Value,
    state: Option<String>,
) -> Result<InputRequiredResult, ErrorData> {
    let mut result = json!({"resultType": "input_required", "inputRequests": requests});
    if let Some(state) = state {
        result["requestState"] = Value::String(state);
    }
    from(result)
}

/// The integrity seal of fixture request states (its own key, never Airlock's).
fn codec() -> &'static RequestStateCodec {
    static CODEC: std::sync::OnceLock<RequestStateCodec> = std::sync::OnceLock::new();
    CODEC.get_or_init(|| {
        let mut key = [0u8; 32];
        // A fixed key would do for a test build, but a random one costs nothing.
        let _ = getrandom::fill(&mut key);
        RequestStateCodec::new_unchecked(key.to_vec())
    })
}

fn seal(step: &str) -> String {
    codec().seal(step.as_bytes())
}

/// The step a state says, or an invalid-params error if it is not one we sealed.
fn opened(state: Option<&str>) -> Result<Option<String>, ErrorData> {
    match state {
        None => Ok(None),
        Some(sealed) => codec()
            .open(sealed)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .map(Some)
            .ok_or_else(|| {
                ErrorData::invalid_params("requestState failed its integrity check", None)
            }),
    }
}

/// An accepted elicitation's content, if `responses[key]` is one.
fn accepted<'a>(responses: Option<&'a InputResponses>, key: &str) -> Option<&'a Value> {
    let answer = responses?.get(key)?;
    (answer.get("action")? == "accept").then_some(())?;
    answer.get("content").filter(|c| c.is_object())
}

fn answered(responses: Option<&InputResponses>, key: &str) -> bool {
    responses
        .and_then(|r| r.get(key))
        .is_some_and(Value::is_object)
}

impl WithFixtures {
    async fn log(&self, context: &RequestContext<RoleServer>, message: &str) {
        let wanted = context
            .meta
            .log_level()
            .or_else(|| self.level.lock().ok().and_then(|l| *l));
        // No level asked, no log (2026-07-28 asks per request, older eras per session).
        if wanted.is_some_and(|w| rank(&w) <= rank(&LoggingLevel::Info)) {
            let _ = context
                .peer
                .notify_logging_message(
                    LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(message))
                        .with_logger("airlock-conformance"),
                )
                .await;
        }
    }

    async fn fixture(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arg = |name: &str| {
            request
                .arguments
                .as_ref()
                .and_then(|a| a.get(name))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        if TASK_TOOLS.iter().any(|(n, _)| *n == request.name) {
            return self.task_fixture(request, context).await;
        }
        let responses = request.input_responses.as_ref();
        let state = opened(request.request_state.as_deref())?;
        let pause = || tokio::time::sleep(std::time::Duration::from_millis(50));
        let done: CallToolResult = match request.name.as_ref() {
            "json_schema_2020_12_tool" => text("Schema accepted"),
            "test_simple_text" => text("This is a simple text response for testing."),
            "test_image_content" => {
                CallToolResult::success(vec![ContentBlock::image(PNG, "image/png")])
            }
            "test_audio_content" => complete(json!({
                "content": [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}],
            }))?,
            "test_embedded_resource" => complete(json!({"content": [{
                "type": "resource",
                "resource": {
                    "uri": "test://embedded-resource",
                    "mimeType": "text/plain",
                    "text": "This is an embedded resource content.",
                },
            }]}))?,
            "test_multiple_content_types" => complete(json!({"content": [
                {"type": "text", "text": "Multiple content types test:"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {"type": "resource", "resource": {
                    "uri": "test://mixed-content-resource",
                    "mimeType": "application/json",
                    "text": "{\"test\":\"data\",\"value\":123}",
                }},
            ]}))?,
            "test_tool_with_logging" | "test_logging_tool" => {
                for message in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ] {
                    self.log(&context, message).await;
                    pause().await;
                }
                text("Logging test completed")
            }
            "test_error_handling" => CallToolResult::error(vec![ContentBlock::text(
                "This tool intentionally returns an error for testing",
            )]),
            "test_tool_with_progress" => {
                let token = context.meta.get_progress_token();
                for (done, message) in [(0.0, "Starting"), (50.0, "Halfway"), (100.0, "Complete")] {
                    if let Some(token) = &token {
                        let _ = context
                            .peer
                            .notify_progress(
                                ProgressNotificationParam::new(token.clone(), done)
                                    .with_total(100.0)
                                    .with_message(message),
                            )
                            .await;
                    }
                    pause().await;
                }
                text("Progress test completed")
            }
            "test_sampling" => {
                let asked = CreateMessageRequestParams::new(
                    vec![SamplingMessage::user_text(arg("prompt"))],
                    100,
                );
                match context.peer.create_message(asked).await {
                    Ok(answer) => {
                        let said = answer
                            .message
                            .content
                            .first()
                            .and_then(|c| c.as_text())
                            .map(|t| t.text.clone())
                            .unwrap_or_default();
                        text(format!("LLM response: {said}"))
                    }
                    Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
                        "Sampling error: {e}"
                    ))]),
                }
            }
            "test_elicitation"
            | "test_elicitation_sep1034_defaults"
            | "test_elicitation_sep1330_enums" => {
                let (message, schema, prefix) = match request.name.as_ref() {
                    "test_elicitation" => (
                        arg("message"),
                        json!({
                            "type": "object",
                            "properties": {
                                "username": {"type": "string", "description": "User's response"},
                                "email": {"type": "string", "description": "User's email address"},
                            },
                            "required": ["username", "email"],
                        }),
                        "User response",
                    ),
                    "test_elicitation_sep1034_defaults" => (
                        "Please review these values (each has a default)".to_owned(),
                        json!({"type": "object", "properties": {
                            "name": {"type": "string", "default": "John Doe"},
                            "age": {"type": "integer", "default": 30},
                            "score": {"type": "number", "default": 95.5},
                            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                            "verified": {"type": "boolean", "default": true},
                        }}),
                        "Elicitation completed",
                    ),
                    _ => (
                        "Please choose".to_owned(),
                        json!({"type": "object", "properties": {
                            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                            "titledSingle": {"type": "string", "oneOf": [
                                {"const": "value1", "title": "First Option"},
                                {"const": "value2", "title": "Second Option"},
                                {"const": "value3", "title": "Third Option"},
                            ]},
                            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                                "enumNames": ["Option One", "Option Two", "Option Three"]},
                            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                            "titledMulti": {"type": "array", "items": {"anyOf": [
                                {"const": "value1", "title": "First Choice"},
                                {"const": "value2", "title": "Second Choice"},
                                {"const": "value3", "title": "Third Choice"},
                            ]}},
                        }}),
                        "Elicitation completed",
                    ),
                };
                let asked = ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message,
                    requested_schema: from(schema)?,
                };
                match context.peer.create_elicitation(asked).await {
                    Ok(answer) => {
                        let action = serde_json::to_value(&answer.action).unwrap_or_default();
                        let content = answer.content.unwrap_or_default();
                        text(format!(
                            "{prefix}: action={}, content={content}",
                            action.as_str().unwrap_or("?")
                        ))
                    }
                    Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
                        "Elicitation error: {e}"
                    ))]),
                }
            }
            "test_missing_capability" => {
                let has = context
                    .client_capabilities()
                    .is_some_and(|c| c.sampling.is_some());
                if !has {
                    return Err(ErrorData::missing_required_client_capability(from(
                        json!({"sampling": {}}),
                    )?));
                }
                text("sampling is declared")
            }
            "test_streaming_elicitation" => {
                return Ok(input_required(
                    json!({"confirm": elicit("Continue?", "ok", "boolean")}),
                    None,
                )?
                .into());
            }
            "test_input_required_result_elicitation" => match accepted(responses, "user_name") {
                Some(content) => text(format!(
                    "Hello, {}!",
                    content
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("there")
                )),
                None => {
                    if responses
                        .and_then(|r| r.get("user_name"))
                        .is_some_and(|v| !v.is_object())
                    {
                        return Err(ErrorData::invalid_params(
                            "inputResponses.user_name must be an elicitation result",
                            None,
                        ));
                    }
                    return Ok(input_required(
                        json!({"user_name": elicit("What is your name?", "name", "string")}),
                        None,
                    )?
                    .into());
                }
            },
            "test_input_required_result_sampling" => {
                if !answered(responses, "capital_question") {
                    return Ok(input_required(
                        json!({"capital_question": sample("What is the capital of France?", 100)}),
                        None,
                    )?
                    .into());
                }
                let said = responses
                    .and_then(|r| r.get("capital_question"))
                    .and_then(|a| {
                        a.pointer("/content/text")
                            .or_else(|| a.pointer("/content/0/text"))
                    })
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                text(format!("The model said: {said}"))
            }
            "test_input_required_result_list_roots" => {
                let Some(given) = responses
                    .and_then(|r| r.get("client_roots"))
                    .and_then(|r| r.get("roots"))
                    .and_then(Value::as_array)
                else {
                    return Ok(input_required(json!({"client_roots": roots()}), None)?.into());
                };
                let uris: Vec<&str> = given
                    .iter()
                    .filter_map(|r| r.get("uri").and_then(Value::as_str))
                    .collect();
                text(format!("Roots: {}", uris.join(", ")))
            }
            "test_input_required_result_request_state" => {
                match (state.as_deref(), answered(responses, "confirm")) {
                    (Some("confirm"), true) => text("state-ok: confirmed"),
                    _ => {
                        return Ok(input_required(
                            json!({"confirm": elicit("Please confirm", "ok", "boolean")}),
                            Some(seal("confirm")),
                        )?
                        .into());
                    }
                }
            }
            "test_input_required_result_multiple_inputs" => {
                let all = ["user_name", "greeting", "client_roots"]
                    .iter()
                    .all(|k| answered(responses, k));
                if state.as_deref() == Some("multiple") && all {
                    text("Received every input: user_name, greeting, client_roots")
                } else {
                    return Ok(input_required(
                        json!({
                            "user_name": elicit("What is your name?", "name", "string"),
                            "greeting": sample("Generate a greeting", 50),
                            "client_roots": roots(),
                        }),
                        Some(seal("multiple")),
                    )?
                    .into());
                }
            }
            "test_input_required_result_multi_round" => match state.as_deref() {
                Some("step1") if answered(responses, "step1") => {
                    return Ok(input_required(
                        json!({"step2": elicit("Step 2: What is your favorite color?", "color", "string")}),
                        Some(seal("step2")),
                    )?
                    .into());
                }
                Some("step2") if answered(responses, "step2") => text("Both steps answered"),
                _ => {
                    return Ok(input_required(
                        json!({"step1": elicit("Step 1: What is your name?", "name", "string")}),
                        Some(seal("step1")),
                    )?
                    .into());
                }
            },
            "test_input_required_result_tampered_state" => match state {
                Some(_) => text("state intact"),
                None => {
                    return Ok(input_required(
                        json!({"confirm": elicit("Please confirm", "ok", "boolean")}),
                        Some(seal("tamper-check")),
                    )?
                    .into());
                }
            },
            "test_input_required_result_capabilities" => {
                let caps = context.client_capabilities();
                let mut asks = serde_json::Map::new();
                if caps.as_ref().is_some_and(|c| c.sampling.is_some()) {
                    asks.insert("question".into(), sample("Say hello", 20));
                }
                if caps.as_ref().is_some_and(|c| c.elicitation.is_some()) {
                    asks.insert(
                        "user_name".into(),
                        elicit("What is your name?", "name", "string"),
                    );
                }
                if asks.is_empty() || asks.keys().any(|k| answered(responses, k)) {
                    text("Nothing more to ask")
                } else {
                    return Ok(input_required(Value::Object(asks), None)?.into());
                }
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no fixture {other}"),
                    None,
                ));
            }
        };
        Ok(done.into())
    }
}

fn prompts() -> Result<ListPromptsResult, ErrorData> {
    complete(json!({"prompts": [
        {"name": "test_simple_prompt", "description": "A prompt with no arguments"},
        {"name": "test_prompt_with_arguments", "description": "A prompt with two arguments",
            "arguments": [
                {"name": "arg1", "description": "First test argument", "required": true},
                {"name": "arg2", "description": "Second test argument", "required": true},
            ]},
        {"name": "test_prompt_with_embedded_resource", "description": "A prompt embedding a resource",
            "arguments": [{"name": "resourceUri", "description": "URI of the resource to embed", "required": true}]},
        {"name": "test_prompt_with_image", "description": "A prompt with an image"},
        {"name": "test_input_required_result_prompt", "description": "A prompt that asks the user first"},
    ]}))
}

fn prompt(request: &GetPromptRequestParams) -> Result<GetPromptResponse, ErrorData> {
    let arg = |name: &str| {
        request
            .arguments
            .as_ref()
            .and_then(|a| a.get(name))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let user = |content: Value| json!({"role": "user", "content": content});
    let messages = match request.name.as_str() {
        "test_simple_prompt" => vec![user(
            json!({"type": "text", "text": "This is a simple prompt for testing."}),
        )],
        "test_prompt_with_arguments" => vec![user(json!({
            "type": "text",
            "text": format!("Prompt with arguments: arg1='{}', arg2='{}'", arg("arg1"), arg("arg2")),
        }))],
        "test_prompt_with_embedded_resource" => vec![
            user(json!({"type": "resource", "resource": {
                "uri": arg("resourceUri"),
                "mimeType": "text/plain",
                "text": "Embedded resource content for testing.",
            }})),
            user(json!({"type": "text", "text": "Please process the embedded resource above."})),
        ],
        "test_prompt_with_image" => vec![
            user(json!({"type": "image", "data": PNG, "mimeType": "image/png"})),
            user(json!({"type": "text", "text": "Please analyze the image above."})),
        ],
        "test_input_required_result_prompt" => {
            match accepted(request.input_responses.as_ref(), "user_context") {
                Some(content) => vec![user(json!({
                    "type": "text",
                    "text": format!("Context: {}", content.get("context").and_then(Value::as_str).unwrap_or_default()),
                }))],
                None => {
                    return Ok(input_required(
                    json!({"user_context": elicit("What context should the prompt use?", "context", "string")}),
                    None,
                )?
                .into());
                }
            }
        }
        other => {
            return Err(ErrorData::invalid_params(
                format!("no prompt {other}"),
                None,
            ));
        }
    };
    Ok(complete::<GetPromptResult>(json!({"messages": messages}))?.into())
}

fn resource(uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let contents = match uri {
        "test://static-text" => json!({"uri": uri, "mimeType": "text/plain",
            "text": "This is the content of the static text resource."}),
        "test://static-binary" => json!({"uri": uri, "mimeType": "image/png", "blob": PNG}),
        "test://watched-resource" => {
            json!({"uri": uri, "mimeType": "text/plain", "text": "Watched."})
        }
        _ => match uri
            .strip_prefix("test://template/")
            .and_then(|rest| rest.strip_suffix("/data"))
        {
            Some(id) if !id.is_empty() && !id.contains('/') => json!({
                "uri": uri,
                "mimeType": "application/json",
                "text": json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string(),
            }),
            _ => {
                return Err(ErrorData::resource_not_found(
                    format!("no resource {uri}"),
                    Some(json!({"uri": uri})),
                ));
            }
        },
    };
    complete(json!({"contents": [contents]}))
}

impl ServerHandler for WithFixtures {
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.inner.initialize(request, context).await
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        let _ = context;
        // Subscriptions are a stateful-era feature here: the 2026-07-28 wire has
        // `subscriptions/listen`, which these fixtures do not offer.
        let mut info = self.get_info();
        if let Some(resources) = info.capabilities.resources.as_mut() {
            resources.subscribe = None;
        }
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            info,
        ))
    }

    fn get_info(&self) -> ServerConfig {
        let mut info = self.inner.get_info();
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_logging()
            .enable_completions()
            .enable_tasks()
            .build();
        capabilities.tools = info.capabilities.tools.take().or(capabilities.tools);
        info.capabilities = capabilities;
        info
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut listed = self.inner.list_tools(request, context).await?;
        listed.tools.extend(tools());
        Ok(listed)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        match is_fixture(name) {
            true => tools().into_iter().find(|t| t.name == name),
            false => self.inner.get_tool(name),
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if is_fixture(&request.name) {
            return self.fixture(request, context).await;
        }
        self.inner.call_tool(request, context).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.inner.get_task(request, context).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.update_task(request, context).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.cancel_task(request, context).await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut level) = self.level.lock() {
            *level = Some(request.level);
        }
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        prompts()
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        prompt(&request)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        complete(json!({"resources": [
            {"uri": "test://static-text", "name": "static-text", "description": "A static text resource", "mimeType": "text/plain"},
            {"uri": "test://static-binary", "name": "static-binary", "description": "A static binary resource", "mimeType": "image/png"},
            {"uri": "test://watched-resource", "name": "watched-resource", "description": "A resource to subscribe to", "mimeType": "text/plain"},
        ]}))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        complete(json!({"resourceTemplates": [{
            "uriTemplate": "test://template/{id}/data",
            "name": "template-data",
            "description": "Data for an id",
            "mimeType": "application/json",
        }]}))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        Ok(resource(&request.uri)?.into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut set) = self.subscribed.lock() {
            set.insert(request.uri);
        }
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut set) = self.subscribed.lock() {
            set.remove(&request.uri);
        }
        Ok(())
    }
}
