// Starts s3rver with its own command line, in a process that outlives a
// failed request. s3rver's file store removes a prefix's directory when its
// last object is deleted; an object written into that prefix at the same
// moment fails with ENOENT in a stream without an error handler, which would
// end the whole server. Real S3 has no such race: here the request fails
// (the client sees an error and retries) and the server goes on.
'use strict';

process.on('uncaughtException', (err) => {
  console.error(`s3rver: a request failed: ${err.message}`);
});

require('s3rver/bin/s3rver.js');
