// Security keys (WebAuthn) for the two forms that carry data-webauthn="create" or "get":
// on submit, ask the browser for a new credential or an assertion with the server's options
// (data-options, JSON with base64url bytes), then send its answer as JSON in the form's
// "credential" field. The only script of regdesk's pages (the CSP allows 'self' there only).
"use strict";

(function () {
  function toBytes(base64url) {
    const base64 = base64url.replace(/-/g, "+").replace(/_/g, "/");
    const padded = base64 + "=".repeat((4 - (base64.length % 4)) % 4);
    return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
  }

  function toBase64url(buffer) {
    let text = "";
    for (const byte of new Uint8Array(buffer)) text += String.fromCharCode(byte);
    return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function withBytes(descriptors) {
    return (descriptors || []).map((d) => Object.assign({}, d, { id: toBytes(d.id) }));
  }

  function creationOptions(options) {
    return Object.assign({}, options, {
      challenge: toBytes(options.challenge),
      user: Object.assign({}, options.user, { id: toBytes(options.user.id) }),
      excludeCredentials: withBytes(options.excludeCredentials),
    });
  }

  function requestOptions(options) {
    return Object.assign({}, options, {
      challenge: toBytes(options.challenge),
      allowCredentials: withBytes(options.allowCredentials),
    });
  }

  function answer(credential) {
    const response = credential.response;
    const sent = { clientDataJSON: toBase64url(response.clientDataJSON) };
    if (response.attestationObject) {
      sent.attestationObject = toBase64url(response.attestationObject);
      if (response.getTransports) sent.transports = response.getTransports();
    } else {
      sent.authenticatorData = toBase64url(response.authenticatorData);
      sent.signature = toBase64url(response.signature);
      if (response.userHandle) sent.userHandle = toBase64url(response.userHandle);
    }
    return JSON.stringify({
      id: credential.id,
      rawId: toBase64url(credential.rawId),
      type: credential.type,
      response: sent,
      clientExtensionResults: credential.getClientExtensionResults(),
    });
  }

  function say(text) {
    const problem = document.getElementById("webauthn-problem");
    if (problem) {
      problem.textContent = text;
      problem.hidden = false;
    }
  }

  function ceremony(form, event) {
    const field = form.elements.namedItem("credential");
    if (field.value || !window.PublicKeyCredential || !navigator.credentials) return;
    event.preventDefault();
    const options = JSON.parse(form.dataset.options);
    const asked =
      form.dataset.webauthn === "create"
        ? navigator.credentials.create({ publicKey: creationOptions(options) })
        : navigator.credentials.get({ publicKey: requestOptions(options) });
    asked.then(
      (credential) => {
        field.value = answer(credential);
        form.submit();
      },
      () => say("Your browser did not get an answer from a security key. Press the button to try again."),
    );
  }

  document.addEventListener("DOMContentLoaded", () => {
    for (const form of document.querySelectorAll("form[data-webauthn]")) {
      form.addEventListener("submit", (event) => ceremony(form, event));
    }
  });
})();
