"""Verifies a ServiceAccount token against the cluster's issuer discovery
documents (argv: token file, openid-configuration file, jwks file), as a
relying party would: signature by the JWKS key the header names, issuer, audience.
The clock is the test's fake one, so exp/iat/nbf are checked by the Rust side."""
import json
import sys

import jwt

token = open(sys.argv[1]).read().strip()
config = json.load(open(sys.argv[2]))
jwks = jwt.PyJWKSet.from_dict(json.load(open(sys.argv[3])))
kid = jwt.get_unverified_header(token)["kid"]
key = next(k for k in jwks.keys if k.key_id == kid)
claims = jwt.decode(
    token,
    key=key.key,
    algorithms=config["id_token_signing_alg_values_supported"],
    audience=config["issuer"],
    issuer=config["issuer"],
    options={"verify_exp": False, "verify_iat": False, "verify_nbf": False},
)
print(json.dumps(claims, sort_keys=True))
