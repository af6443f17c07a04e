/* global pm -- the Postman sandbox, where newman runs this before the request */
// An open review item for the review requests to act on: the example agent answers a message
// it has no capability for with its fallback, which files the message in the inbox.
pm.sendRequest({
  url: pm.variables.get('baseUrl') + '/api/v1/agents/acme-support/converse',
  method: 'POST',
  header: { 'tenant-id': pm.variables.get('apiKey'), 'content-type': 'application/json' },
  body: { mode: 'raw', raw: JSON.stringify({ message: 'do you sell gift cards?', context: { version: 'v1', context: { identity: { user_id: pm.variables.get('scratchUser') } } } }) },
}, (err, res) => {
  if (err || res.code !== 200) throw new Error('could not file a review item: ' + (err || res.code));
});
