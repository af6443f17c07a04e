/* global pm -- the Postman sandbox, where newman runs this before the request */
// PUT …/knowledge/sources/{source}: the scratch source's file is the help centre PDF `npm start`
// loads (newman reads it from its working directory, the repository), with a title and a tag.
pm.request.body.update({
  mode: 'formdata',
  formdata: [
    { key: 'file', type: 'file', src: 'examples/knowledge/acme-help-centre.pdf' },
    { key: 'title', type: 'text', value: 'Contract tests' },
    { key: 'tags', type: 'text', value: 'contract-tests' },
  ],
});
