#compdef storypost
# Completion of `storypost` for zsh. Install: storypost completion zsh --install
# (or source this file after compinit). The candidates come from `storypost __complete`.
_storypost() {
    local line
    local -a found described
    found=("${(@f)$("${words[1]}" __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    if [[ ${found[1]} == __files__ ]]; then
        _files
        return
    fi
    for line in "${found[@]}"; do
        [[ -n $line ]] || continue
        described+=("${${line%%$'\t'*}//:/\\:}:${line#*$'\t'}")
    done
    _describe -t commands storypost described
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    _storypost "$@"
else
    compdef _storypost storypost
fi
