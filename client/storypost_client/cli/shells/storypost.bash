# Completion of `storypost` for bash. Install: storypost completion bash --install
# (or source this file from ~/.bashrc). The candidates come from `storypost __complete`.
_storypost() {
    local IFS=$'\n' line
    local -a found
    found=($("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)) || return
    COMPREPLY=()
    if [[ ${found[0]} == __files__ ]]; then
        compopt -o filenames 2>/dev/null
        COMPREPLY=($(compgen -f -- "${COMP_WORDS[COMP_CWORD]}"))
        return
    fi
    for line in "${found[@]}"; do
        COMPREPLY+=("${line%%$'\t'*}")
    done
}
complete -F _storypost storypost
