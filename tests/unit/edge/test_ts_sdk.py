"""The TypeScript SDK (sdk-ts/): its generated code matches the catalog, it compiles under
`tsc --strict`, its rules hold against a fake edge (Node's test runner), and it is an npm
package a Node caller installs and type-checks against. Against the real stack:
tests/integration/client/test_sdk_ts.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.node import BIN, ROOT, SDK, build_sdk, node_ready, run


def test_committed_generated_code_equals_a_fresh_generation() -> None:
    # No Node needed: the drift check is Python's, like the Python SDK's (gen_client --check).
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_ts_client.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_sdk_compiles_and_its_unit_tests_pass() -> None:
    build_sdk()
    ran = run([node_ready(), "--test", str(SDK / "test" / "unit.test.mjs")], timeout=300)
    assert "# fail 0" in ran.stdout, ran.stdout


CONSUMER = """\
import {
  BadRequestError,
  StorypostClient,
  type SchedulePhotoappStoryResponse,
  type SocialAccount,
} from "storypost";

export async function post(client: StorypostClient): Promise<SchedulePhotoappStoryResponse> {
  const accounts: SocialAccount[] = (await client.listSocialAccounts()).socialAccounts;
  const username = accounts.find((a) => a.photoappUsername)?.photoappUsername ?? "alice";
  try {
    const html = "<photoapp-story><h1>Hi</h1></photoapp-story>";
    const story = await client.schedulePhotoappStory({ html, photoappUsername: username });
    await client.waitForStory(story.storyPostUuid);
    return story;
  } catch (error) {
    if (error instanceof BadRequestError && error.validation) {
      console.error(error.validation.validationErrorExplanation, error.requestId);
    }
    throw error;
  }
}

// @ts-expect-error: a render procedure takes exactly one of url and html
export const both = (c: StorypostClient) => c.createDraft({ url: "https://x", html: "<p/>" });
"""


def test_the_package_installs_and_type_checks_in_a_caller_project(tmp_path: Path) -> None:
    """`npm pack` (which builds dist/), then install the tarball in a new project, as a caller
    would, and compile a use of it with `tsc --strict`: ESM, declarations, no dependencies."""
    node_ready()
    packed = run(["npm", "pack", "--json", "--pack-destination", str(tmp_path)], timeout=300)
    tarball = tmp_path / json.loads(packed.stdout)[0]["filename"]
    manifest = json.loads((SDK / "package.json").read_text())
    assert "dependencies" not in manifest, "no runtime dependency beyond the platform"
    project = tmp_path / "caller"
    project.mkdir()
    (project / "package.json").write_text(json.dumps({"name": "caller", "type": "module"}))
    run(
        ["npm", "install", "--offline", "--no-audit", "--no-fund", str(tarball)],
        timeout=300,
        cwd=project,
    )
    (project / "use.ts").write_text(CONSUMER)
    (project / "tsconfig.json").write_text(
        json.dumps(
            {
                "compilerOptions": {
                    "strict": True,
                    "noEmit": True,
                    "target": "es2022",
                    "module": "nodenext",
                    "moduleResolution": "nodenext",
                    # The caller's own @types/node (here: the SDK's devDependency).
                    "typeRoots": [str(SDK / "node_modules" / "@types")],
                    "types": ["node"],
                },
                "files": ["use.ts"],
            }
        )
    )
    run([str(BIN / "tsc"), "-p", str(project / "tsconfig.json")], timeout=300, cwd=project)
    imported = run(
        [
            node_ready(),
            "--input-type=module",
            "-e",
            'import { StorypostClient, PROCEDURES } from "storypost"; '
            "console.log(typeof StorypostClient, Object.keys(PROCEDURES).length);",
        ],
        timeout=60,
        cwd=project,
    )
    assert imported.stdout.split()[0] == "function"
