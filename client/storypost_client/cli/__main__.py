"""`python -m storypost_client.cli`: the caller commands (whether or not the server is here)."""

from storypost_client.cli.app import main

if __name__ == "__main__":
    main()
